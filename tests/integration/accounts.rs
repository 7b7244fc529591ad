//! Dashboard accounts, sessions, projects and members.

use rocket::http::{ContentType, Cookie, SameSite, Status};
use serde_json::{Value, json};

use crate::common::{TestApp, assert_envelope, body, session_cookie};

#[rocket::async_test]
async fn signup_sets_a_session_and_login_logout_work() {
    let app = TestApp::new().await;
    let res = app
        .post_json("/auth/signup", &json!({ "email": " Ada@Example.com ", "password": "password123" }))
        .await;
    assert_eq!(res.status(), Status::Ok);
    let cookie = session_cookie(&res);
    assert_eq!(cookie.http_only(), Some(true));
    assert_eq!(cookie.same_site(), Some(SameSite::Lax));
    assert_eq!(cookie.secure(), None, "not Secure on an http public_url");
    assert_eq!(cookie.path(), Some("/"));
    let user = body(res).await;
    assert_eq!(user["email"], json!("ada@example.com"));
    assert!(user.get("passwordHash").is_none() && user.get("password_hash").is_none());

    let res = app.client.get("/users/@me").cookie(cookie.clone()).dispatch().await;
    assert_eq!(body(res).await["id"], user["id"]);

    let res =
        app.post_json("/auth/login", &json!({ "email": "ADA@example.com", "password": "password123" })).await;
    assert_eq!(res.status(), Status::Ok);
    let login_cookie = session_cookie(&res);
    let res = app.client.get("/users/@me").cookie(login_cookie).dispatch().await;
    assert_eq!(res.status(), Status::Ok);

    let res = app
        .post_json("/auth/login", &json!({ "email": "ada@example.com", "password": "wrong password" }))
        .await;
    assert_envelope(res, 401, "INVALID_CREDENTIALS").await;
    let res = app
        .post_json("/auth/login", &json!({ "email": "nobody@example.com", "password": "password123" }))
        .await;
    assert_envelope(res, 401, "INVALID_CREDENTIALS").await;

    let res = app.client.get("/auth/logout").cookie(cookie).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
    let cleared = res.cookies().get("tidings_session").expect("logout sets an expiring cookie").clone();
    assert_eq!(cleared.value(), "");
}

#[rocket::async_test]
async fn a_forged_or_foreign_session_is_refused() {
    let app = TestApp::new().await;
    let other = TestApp::new().await;
    let cookie = other.signup("a@example.com").await;
    let res = app.client.get("/users/@me").cookie(cookie).dispatch().await;
    assert_envelope(res, 401, "MISSING_AUTH").await;
    let res = app
        .client
        .get("/users/@me")
        .cookie(Cookie::new("tidings_session", "forged.token.here"))
        .dispatch()
        .await;
    assert_envelope(res, 401, "MISSING_AUTH").await;
}

#[rocket::async_test]
async fn signup_rules() {
    let app = TestApp::new().await;
    app.signup("taken@example.com").await;
    let res = app
        .post_json("/auth/signup", &json!({ "email": "TAKEN@example.com", "password": "password123" }))
        .await;
    assert_envelope(res, 409, "CONFLICT").await;
    let res =
        app.post_json("/auth/signup", &json!({ "email": "new@example.com", "password": "1234567" })).await;
    let error = assert_envelope(res, 422, "VALIDATION_ERROR").await;
    assert_eq!(error["errors"][0]["field"], json!("password"));
    let res = app.post_json("/auth/signup", &json!({ "password": "password123" })).await;
    let error = assert_envelope(res, 422, "VALIDATION_ERROR").await;
    assert_eq!(
        error["errors"][0],
        json!({ "field": "email", "code": "required", "message": "email is required" })
    );
    assert_eq!(app.store().count("users", &[]), 1);
}

#[rocket::async_test]
async fn signups_can_be_disabled() {
    let app = TestApp::with(|c| c.auth.disable_signups = Some(true)).await;
    let res =
        app.post_json("/auth/signup", &json!({ "email": "a@example.com", "password": "password123" })).await;
    assert_envelope(res, 403, "FORBIDDEN").await;
    let res = app.client.get("/config").dispatch().await;
    assert_eq!(body(res).await["features"]["signups"], json!(false));
}

#[rocket::async_test]
async fn public_config_and_oauth_config_need_no_auth() {
    let app = TestApp::new().await;
    let res = app.client.get("/config").dispatch().await;
    assert_eq!(res.status(), Status::Ok);
    let config = body(res).await;
    assert_eq!(
        config["features"],
        json!({ "billing": false, "oauth": false, "signups": true, "tracking": true, "captured": true })
    );
    assert_eq!(config["tracking"], json!({ "opens": true, "clicks": true }));
    let res = app.client.get("/auth/oauth-config").dispatch().await;
    assert_eq!(body(res).await, json!({ "providers": [] }));
}

#[rocket::async_test]
async fn projects_are_listed_with_public_keys_only() {
    let app = TestApp::new().await;
    let session = app.signup("owner@example.com").await;
    let first = app.project(&session, "First").await;
    let second = app.project(&session, "Second").await;
    let res = app.client.get("/users/@me/projects").cookie(session.clone()).dispatch().await;
    let list = body(res).await;
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["id"], json!(first.id));
    assert_eq!(list[1]["publicKey"], json!(second.public_key));
    assert_eq!(list[0]["role"], json!("OWNER"));
    assert!(list.iter().all(|p| p.get("secretKey").is_none()));

    let res = app
        .client
        .post("/users/@me/projects")
        .cookie(session.clone())
        .header(ContentType::JSON)
        .body(json!({ "name": "  " }).to_string())
        .dispatch()
        .await;
    let error = assert_envelope(res, 422, "VALIDATION_ERROR").await;
    assert_eq!(error["errors"][0]["field"], json!("name"));

    let res = app
        .client
        .patch(format!("/users/@me/projects/{}", first.id))
        .cookie(session.clone())
        .header(ContentType::JSON)
        .body(json!({ "name": "Renamed" }).to_string())
        .dispatch()
        .await;
    assert_eq!(body(res).await["name"], json!("Renamed"));
    let res = app
        .client
        .patch(format!("/users/@me/projects/{}", first.id))
        .cookie(session.clone())
        .header(ContentType::JSON)
        .body(json!({ "colour": "red" }).to_string())
        .dispatch()
        .await;
    assert_envelope(res, 422, "VALIDATION_ERROR").await;

    let res = app
        .client
        .delete(format!("/users/@me/projects/{}", first.id))
        .cookie(session.clone())
        .header(ContentType::JSON)
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::NoContent);
    let res = app.keyed(app.client.get("/test-probe/secret"), &first.secret_key).dispatch().await;
    assert_envelope(res, 401, "INVALID_API_KEY").await;
    let res = app.client.get("/users/@me/projects").cookie(session).dispatch().await;
    assert_eq!(body(res).await.as_array().unwrap().len(), 1);
}

pub async fn add_member(
    app: &TestApp,
    session: &Cookie<'static>,
    project: &str,
    email: &str,
    role: &str,
) -> (Status, Value) {
    let res = app
        .client
        .post(format!("/projects/{project}/members"))
        .cookie(session.clone())
        .header(ContentType::JSON)
        .body(json!({ "email": email, "role": role }).to_string())
        .dispatch()
        .await;
    let status = res.status();
    (status, body(res).await)
}

async fn set_role(app: &TestApp, session: &Cookie<'static>, project: &str, user: &str, role: &str) -> Status {
    app.client
        .patch(format!("/projects/{project}/members/{user}"))
        .cookie(session.clone())
        .header(ContentType::JSON)
        .body(json!({ "role": role }).to_string())
        .dispatch()
        .await
        .status()
}

async fn remove(app: &TestApp, session: &Cookie<'static>, project: &str, user: &str) -> Status {
    app.client
        .delete(format!("/projects/{project}/members/{user}"))
        .cookie(session.clone())
        .header(ContentType::JSON)
        .dispatch()
        .await
        .status()
}

#[rocket::async_test]
async fn member_roles_are_enforced() {
    let app = TestApp::new().await;
    let (owner, keys) = app.user_with_project("owner@example.com").await;
    let admin = app.signup("admin@example.com").await;
    let member = app.signup("member@example.com").await;
    let outsider = app.signup("outsider@example.com").await;
    let p = keys.id.as_str();

    let (status, admin_row) = add_member(&app, &owner, p, "admin@example.com", "ADMIN").await;
    assert_eq!(status, Status::Ok);
    assert_eq!(admin_row["role"], json!("ADMIN"));
    let admin_id = admin_row["userId"].as_str().unwrap().to_string();
    let (status, member_row) = add_member(&app, &admin, p, "member@example.com", "MEMBER").await;
    assert_eq!(status, Status::Ok, "admins add members");
    let member_id = member_row["userId"].as_str().unwrap().to_string();

    assert_eq!(add_member(&app, &owner, p, "member@example.com", "MEMBER").await.0, Status::Conflict);
    assert_eq!(
        add_member(&app, &owner, p, "nobody@example.com", "MEMBER").await.0,
        Status::Accepted,
        "an email with no account is invited"
    );
    assert_eq!(
        add_member(&app, &owner, p, "outsider@example.com", "KING").await.0,
        Status::UnprocessableEntity
    );
    assert_eq!(
        add_member(&app, &member, p, "outsider@example.com", "MEMBER").await.0,
        Status::Forbidden,
        "members do not manage"
    );
    assert_eq!(
        add_member(&app, &admin, p, "outsider@example.com", "OWNER").await.0,
        Status::Forbidden,
        "admins do not make owners"
    );

    let res = app.client.get(format!("/projects/{p}/members")).cookie(member.clone()).dispatch().await;
    let members = body(res).await;
    let emails: Vec<&str> =
        members.as_array().unwrap().iter().map(|m| m["email"].as_str().unwrap()).collect();
    assert_eq!(emails, ["owner@example.com", "admin@example.com", "member@example.com"]);
    let owner_id = members[0]["userId"].as_str().unwrap().to_string();

    // Each user reads the project with their own role (the dashboard shows what it allows);
    // someone who is not a member gets the 404 of a project that does not exist.
    for (session, role) in [(&owner, "OWNER"), (&admin, "ADMIN"), (&member, "MEMBER")] {
        let res = app.client.get(format!("/users/@me/projects/{p}")).cookie(session.clone()).dispatch().await;
        let project = body(res).await;
        assert_eq!((project["id"].as_str(), project["role"].as_str()), (Some(p), Some(role)));
        assert!(project.get("secretKey").is_none());
    }
    let res = app.client.get(format!("/users/@me/projects/{p}")).cookie(outsider.clone()).dispatch().await;
    assert_envelope(res, 404, "NOT_FOUND").await;
    let res = app.client.get("/users/@me/projects/not-a-project").cookie(owner.clone()).dispatch().await;
    assert_envelope(res, 404, "NOT_FOUND").await;

    // Admins cannot touch the owner; the last owner cannot step down or leave.
    assert_eq!(set_role(&app, &admin, p, &owner_id, "MEMBER").await, Status::Forbidden);
    assert_eq!(remove(&app, &admin, p, &owner_id).await, Status::Forbidden);
    assert_eq!(set_role(&app, &owner, p, &owner_id, "ADMIN").await, Status::Conflict);
    assert_eq!(remove(&app, &owner, p, &owner_id).await, Status::Conflict);

    // Members cannot manage keys or settings.
    let res = app
        .client
        .post(format!("/users/@me/projects/{p}/regenerate-keys"))
        .cookie(member.clone())
        .header(ContentType::JSON)
        .dispatch()
        .await;
    assert_envelope(res, 403, "FORBIDDEN").await;
    let res = app
        .client
        .delete(format!("/users/@me/projects/{p}"))
        .cookie(admin.clone())
        .header(ContentType::JSON)
        .dispatch()
        .await;
    assert_envelope(res, 403, "FORBIDDEN").await;

    // A second owner lets the first step down; anyone may leave.
    assert_eq!(set_role(&app, &owner, p, &admin_id, "OWNER").await, Status::Ok);
    assert_eq!(set_role(&app, &owner, p, &owner_id, "MEMBER").await, Status::Ok);
    assert_eq!(remove(&app, &member, p, &member_id).await, Status::NoContent);
    let res = app.client.get(format!("/projects/{p}/members")).cookie(member).dispatch().await;
    assert_envelope(res, 404, "NOT_FOUND").await;
}
