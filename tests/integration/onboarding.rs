//! `GET /projects/:id/setup-state`: the onboarding checklist follows the project's first steps.

use rocket::http::{Method, Status};
use serde_json::{Value, json};

use crate::send::Mailroom;

async fn setup_state(room: &Mailroom, project: &str) -> (Status, Value) {
    let (status, state, _) = room
        .app
        .as_user(Method::Get, &format!("/projects/{project}/setup-state"), Some(&room.session), None)
        .await;
    (status, state)
}

#[rocket::async_test]
async fn the_checklist_follows_the_first_steps() {
    let room = Mailroom::new().await;
    let (app, keys) = (&room.app, &room.keys);
    let fresh = app.project(&room.session, "Fresh").await;
    let (status, state) = setup_state(&room, &fresh.id).await;
    assert_eq!(status, Status::Ok);
    assert_eq!(
        state,
        json!({ "domainVerified": false, "firstContact": false, "firstEvent": false, "firstSend": false,
                "firstCampaign": false, "completed": 0, "total": 5 })
    );

    // The mail room's project has its domain verified.
    let (_, state) = setup_state(&room, &keys.id).await;
    assert_eq!((state["domainVerified"].clone(), state["completed"].clone()), (json!(true), json!(1)));

    app.post("/contacts", &keys.secret_key, json!({ "email": "ada@example.test" })).await;
    let (_, state) = setup_state(&room, &keys.id).await;
    assert_eq!((state["firstContact"].clone(), state["firstEvent"].clone()), (json!(true), json!(false)));

    room.send_ok(
        json!({ "to": "ada@example.test", "from": "hi@example.test", "subject": "Hi", "body": "<p>Hi</p>" }),
    )
    .await;
    let (_, state) = setup_state(&room, &keys.id).await;
    assert_eq!(state["firstSend"], json!(false), "queued is not sent yet");
    room.deliver(1).await;
    let (_, state) = setup_state(&room, &keys.id).await;
    assert_eq!(state["firstSend"], json!(true));
    assert_eq!(state["firstEvent"], json!(false), "the service's own email.sent is not the app's event");

    app.post("/v1/track", &keys.public_key, json!({ "event": "signed-up", "email": "ada@example.test" }))
        .await;
    let campaign = json!({ "name": "News", "subject": "News", "body": "<p>n</p>", "from": "news@example.test", "audienceType": "ALL" });
    app.post("/campaigns", &keys.secret_key, campaign).await;
    let (_, state) = setup_state(&room, &keys.id).await;
    assert_eq!(
        (state["firstEvent"].clone(), state["firstCampaign"].clone(), state["completed"].clone()),
        (json!(true), json!(true), json!(5))
    );

    // Another user's project is not found.
    let (stranger, _) = app.user_with_project("stranger@example.com").await;
    let (status, _, _) =
        app.as_user(Method::Get, &format!("/projects/{}/setup-state", keys.id), Some(&stranger), None).await;
    assert_eq!(status, Status::NotFound);
}
