//! The graph's rules: a step leads to at most one next step per branch, nothing leads back to
//! the trigger or away from an EXIT, and every cycle holds a wait.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::rules::invalid;
use crate::core::error::{Error, FieldError, Result};
use crate::db::workflows::{Step, Transition};

/// The branches a step's outgoing transitions carry: `None` for steps with one way on.
pub fn branches(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "CONDITION" => Some(&["yes", "no"]),
        "WAIT_FOR_EVENT" => Some(&["event", "timeout"]),
        _ => None,
    }
}

/// Steps an execution waits at, which may close a cycle.
fn waits(kind: &str) -> bool {
    kind == "DELAY" || kind == "WAIT_FOR_EVENT"
}

/// Checks a new transition against the graph of `steps` and `transitions`: both steps exist,
/// the branch fits the step it leaves, that branch is free (409 otherwise), nothing leads to
/// the trigger or away from an EXIT, and no cycle without a wait appears.
pub fn check_transition(
    steps: &[Step],
    transitions: &[Transition],
    from: &str,
    to: &str,
    branch: Option<&str>,
) -> Result<Option<String>> {
    let find = |id: &str, field: &str| {
        steps.iter().find(|s| s.id == id).ok_or_else(|| {
            Error::Invalid(vec![
                FieldError::new(field, "not_found", "no step of this workflow has this id")
                    .received(json!(id)),
            ])
        })
    };
    let (source, target) = (find(from, "fromStepId")?, find(to, "toStepId")?);
    if target.kind == "TRIGGER" {
        return Err(invalid("toStepId", "invalid_step", "nothing leads back to the TRIGGER step"));
    }
    if source.kind == "EXIT" {
        return Err(invalid(
            "fromStepId",
            "invalid_step",
            "an EXIT step ends the execution: nothing follows it",
        ));
    }
    let branch = match (branches(&source.kind), branch) {
        (None, None) => None,
        (None, Some(b)) => {
            return Err(invalid(
                "branch",
                "unrecognized_key",
                format!("a {} step has one way on: leave out branch (found {b:?})", source.kind),
            ));
        }
        (Some(allowed), Some(b)) if allowed.contains(&b) => Some(b.to_string()),
        (Some(allowed), b) => {
            return Err(Error::Invalid(vec![
                FieldError::new(
                    "branch",
                    if b.is_none() { "required" } else { "invalid_enum_value" },
                    format!(
                        "a transition from a {} step carries branch {}",
                        source.kind,
                        allowed.join(" or ")
                    ),
                )
                .received(json!(b)),
            ]));
        }
    };
    if transitions.iter().any(|t| t.from_step_id == from && t.branch == branch) {
        let way = branch.as_deref().map_or(String::new(), |b| format!(" on branch {b:?}"));
        return Err(Error::conflict(format!(
            "the step already leads somewhere{way}: delete that transition first"
        )));
    }
    if closes_waitless_cycle(steps, transitions, from, to) {
        return Err(invalid(
            "toStepId",
            "waitless_cycle",
            "this transition closes a loop without a DELAY or WAIT_FOR_EVENT step, which would run forever",
        ));
    }
    Ok(branch)
}

/// The branch a new transition names: `branch`, or Plunk's forms of it, `condition: {branch}`
/// (and a wait's legacy `{fallback: true}` for `timeout`) and `waitOutcome` (`EVENT`,
/// `TIMEOUT`). Given in more than one form, they must agree (422 otherwise).
pub fn branch_named(
    branch: Option<&str>,
    condition: Option<&Value>,
    wait_outcome: Option<&str>,
) -> Result<Option<String>> {
    let from_condition = match condition {
        None | Some(Value::Null) => None,
        Some(Value::Object(c)) if c.len() == 1 && c.get("fallback") == Some(&Value::Bool(true)) => {
            Some("timeout")
        }
        Some(Value::Object(c)) if c.len() == 1 && c.get("branch").is_some_and(Value::is_string) => {
            c.get("branch").and_then(Value::as_str)
        }
        Some(other) => {
            return Err(Error::Invalid(vec![
                FieldError::new("condition", "invalid_type", "condition is {branch: \"yes\" | \"no\"}")
                    .received(other.clone()),
            ]));
        }
    };
    let from_outcome = match wait_outcome {
        None => None,
        Some(o) if o.eq_ignore_ascii_case("EVENT") => Some("event"),
        Some(o) if o.eq_ignore_ascii_case("TIMEOUT") => Some("timeout"),
        Some(other) => {
            return Err(Error::Invalid(vec![
                FieldError::new("waitOutcome", "invalid_enum_value", "waitOutcome is EVENT or TIMEOUT")
                    .received(json!(other)),
            ]));
        }
    };
    let mut named = [("branch", branch), ("condition", from_condition), ("waitOutcome", from_outcome)]
        .into_iter()
        .filter_map(|(field, b)| b.map(|b| (field, b)));
    let first = named.next();
    if let (Some((_, b)), Some((field, other))) = (first, named.find(|(_, o)| Some(*o) != first.map(|f| f.1)))
    {
        return Err(invalid(
            field,
            "conflict",
            format!("{field} names branch {other:?}, another form names {b:?}"),
        ));
    }
    Ok(first.map(|(_, b)| b.to_string()))
}

/// Where a new step goes when it is added with `autoConnect` (Plunk's default): after the last
/// step, in the order they were made, that leads nowhere yet and can lead on (not an EXIT).
/// Its ways there: a CONDITION's `yes`, a WAIT_FOR_EVENT's `event` (and `timeout` when it has
/// one), any other step's one way.
pub fn auto_connect(steps: &[Step], transitions: &[Transition]) -> Vec<(String, Option<String>)> {
    let Some(leaf) =
        steps.iter().rev().find(|s| s.kind != "EXIT" && !transitions.iter().any(|t| t.from_step_id == s.id))
    else {
        return Vec::new();
    };
    let way = |branch: &str| (leaf.id.clone(), Some(branch.to_string()));
    match leaf.kind.as_str() {
        "CONDITION" => vec![way("yes")],
        "WAIT_FOR_EVENT" => {
            let config: Value = serde_json::from_str(&leaf.config).unwrap_or(Value::Null);
            let mut ways = vec![way("event")];
            if config.get("timeoutSeconds").is_some_and(|t| !t.is_null()) {
                ways.push(way("timeout"));
            }
            ways
        }
        _ => vec![(leaf.id.clone(), None)],
    }
}

/// Whether adding `from → to` closes a cycle none of whose steps waits: that is, neither end
/// waits and `to` reaches `from` through steps that do not wait.
fn closes_waitless_cycle(steps: &[Step], transitions: &[Transition], from: &str, to: &str) -> bool {
    let kinds: HashMap<&str, &str> = steps.iter().map(|s| (s.id.as_str(), s.kind.as_str())).collect();
    let passable = |id: &str| kinds.get(id).is_some_and(|k| !waits(k));
    if !passable(from) || !passable(to) {
        return false;
    }
    let mut next: HashMap<&str, Vec<&str>> = HashMap::new();
    for t in transitions {
        next.entry(t.from_step_id.as_str()).or_default().push(t.to_step_id.as_str());
    }
    let mut seen = HashSet::from([to]);
    let mut stack = vec![to];
    while let Some(at) = stack.pop() {
        if at == from {
            return true;
        }
        for &n in next.get(at).into_iter().flatten() {
            if passable(n) && seen.insert(n) {
                stack.push(n);
            }
        }
    }
    false
}

/// The transitions that replace a deleted step's when `splice=true`: each way into the step
/// now leads where the step led. A step that branches to more than one place cannot be
/// spliced out (400): which way would its predecessors go?
pub fn splice(
    steps: &[Step],
    transitions: &[Transition],
    removed: &str,
) -> Result<Vec<(String, String, Option<String>)>> {
    let outgoing: Vec<&Transition> = transitions.iter().filter(|t| t.from_step_id == removed).collect();
    let incoming: Vec<&Transition> =
        transitions.iter().filter(|t| t.to_step_id == removed && t.from_step_id != removed).collect();
    let targets: HashSet<&str> =
        outgoing.iter().map(|t| t.to_step_id.as_str()).filter(|&to| to != removed).collect();
    if targets.len() > 1 {
        return Err(Error::malformed(
            "the step leads to more than one step, so its predecessors cannot be reconnected: delete it \
             without splice=true and add the transitions you want",
        ));
    }
    let Some(&target) = targets.iter().next() else { return Ok(Vec::new()) };
    let remaining: Vec<Transition> = transitions
        .iter()
        .filter(|t| t.from_step_id != removed && t.to_step_id != removed)
        .cloned()
        .collect();
    let kept: Vec<Step> = steps.iter().filter(|s| s.id != removed).cloned().collect();
    let mut added = Vec::new();
    let mut graph = remaining;
    for t in incoming {
        if closes_waitless_cycle(&kept, &graph, &t.from_step_id, target) {
            return Err(Error::malformed(
                "reconnecting around the step would close a loop without a DELAY or WAIT_FOR_EVENT step",
            ));
        }
        graph.push(Transition {
            from_step_id: t.from_step_id.clone(),
            to_step_id: target.to_string(),
            branch: t.branch.clone(),
            ..Transition::default()
        });
        added.push((t.from_step_id.clone(), target.to_string(), t.branch.clone()));
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(id: &str, kind: &str) -> Step {
        Step { id: id.into(), kind: kind.into(), config: "{}".into(), ..Step::default() }
    }

    fn edge(from: &str, to: &str, branch: Option<&str>) -> Transition {
        Transition {
            id: format!("{from}-{to}"),
            from_step_id: from.into(),
            to_step_id: to.into(),
            branch: branch.map(str::to_string),
            ..Transition::default()
        }
    }

    #[test]
    fn loops_need_a_wait() {
        let steps =
            [step("t", "TRIGGER"), step("c", "CONDITION"), step("s", "SEND_EMAIL"), step("d", "DELAY")];
        let graph = [edge("t", "c", None), edge("c", "s", Some("yes"))];
        let err = check_transition(&steps, &graph, "s", "c", None).unwrap_err();
        assert_eq!(err.kind(), "invalid", "send → condition → send never waits");
        // Through a delay the same loop is fine.
        let graph = [edge("t", "c", None), edge("c", "s", Some("yes")), edge("s", "d", None)];
        assert_eq!(check_transition(&steps, &graph, "d", "c", None).unwrap(), None);
        // A delay may even lead to itself.
        assert!(check_transition(&steps, &graph, "d", "d", None).is_ok());
    }

    #[test]
    fn branches_fit_the_step_and_each_is_taken_once() {
        let steps =
            [step("t", "TRIGGER"), step("c", "CONDITION"), step("a", "SEND_EMAIL"), step("e", "EXIT")];
        let graph = [edge("t", "c", None), edge("c", "a", Some("yes"))];
        assert_eq!(check_transition(&steps, &graph, "c", "e", None).unwrap_err().kind(), "invalid");
        assert_eq!(check_transition(&steps, &graph, "c", "e", Some("maybe")).unwrap_err().kind(), "invalid");
        assert_eq!(check_transition(&steps, &graph, "c", "e", Some("yes")).unwrap_err().kind(), "conflict");
        assert_eq!(check_transition(&steps, &graph, "c", "e", Some("no")).unwrap(), Some("no".into()));
        assert_eq!(check_transition(&steps, &graph, "a", "e", Some("yes")).unwrap_err().kind(), "invalid");
        assert_eq!(check_transition(&steps, &graph, "t", "a", None).unwrap_err().kind(), "conflict");
        assert_eq!(check_transition(&steps, &graph, "e", "a", None).unwrap_err().kind(), "invalid");
        assert_eq!(check_transition(&steps, &graph, "a", "t", None).unwrap_err().kind(), "invalid");
        assert_eq!(check_transition(&steps, &graph, "a", "x", None).unwrap_err().kind(), "invalid");
    }

    #[test]
    fn splicing_reconnects_each_way_in_to_the_one_way_out() {
        let steps =
            [step("t", "TRIGGER"), step("c", "CONDITION"), step("d", "DELAY"), step("s", "SEND_EMAIL")];
        let graph = [
            edge("t", "c", None),
            edge("c", "d", Some("yes")),
            edge("c", "d", Some("no")),
            edge("d", "s", None),
        ];
        let added = splice(&steps, &graph, "d").unwrap();
        assert_eq!(
            added,
            [
                ("c".to_string(), "s".to_string(), Some("yes".to_string())),
                ("c".into(), "s".into(), Some("no".into()))
            ]
        );
        // Both branches of c lead to d: one way out, so t now leads to d.
        assert_eq!(splice(&steps, &graph, "c").unwrap(), [("t".to_string(), "d".to_string(), None)]);
        // A condition whose branches part cannot be spliced out.
        let parted = [edge("t", "c", None), edge("c", "d", Some("yes")), edge("c", "s", Some("no"))];
        assert_eq!(splice(&steps, &parted, "c").unwrap_err().kind(), "malformed");
        // Nothing after it: the ways in just go.
        assert_eq!(splice(&steps, &graph, "s").unwrap(), []);
    }

    #[test]
    fn a_branch_is_named_in_any_of_its_forms_and_they_agree() {
        let named = |b: Option<&str>, c: Option<Value>, w: Option<&str>| branch_named(b, c.as_ref(), w);
        assert_eq!(named(Some("yes"), None, None).unwrap(), Some("yes".into()));
        assert_eq!(named(None, Some(json!({"branch": "no"})), None).unwrap(), Some("no".into()));
        assert_eq!(named(None, None, Some("TIMEOUT")).unwrap(), Some("timeout".into()));
        assert_eq!(named(None, Some(json!({"fallback": true})), None).unwrap(), Some("timeout".into()));
        assert_eq!(named(Some("event"), None, Some("EVENT")).unwrap(), Some("event".into()));
        assert_eq!(named(None, None, None).unwrap(), None);
        assert_eq!(named(Some("yes"), Some(json!({"branch": "no"})), None).unwrap_err().kind(), "invalid");
        assert_eq!(named(None, None, Some("LATER")).unwrap_err().kind(), "invalid");
        assert_eq!(named(None, Some(json!({"when": "x"})), None).unwrap_err().kind(), "invalid");
    }

    #[test]
    fn a_new_step_follows_the_last_step_that_leads_nowhere() {
        let mut wait = step("w", "WAIT_FOR_EVENT");
        wait.config = json!({"eventName": "paid", "timeoutSeconds": 60}).to_string();
        let steps =
            [step("t", "TRIGGER"), step("c", "CONDITION"), step("s", "SEND_EMAIL"), step("e", "EXIT")];
        assert_eq!(auto_connect(&steps[..1], &[]), [("t".to_string(), None)]);
        assert_eq!(
            auto_connect(&steps[..2], &[edge("t", "c", None)]),
            [("c".to_string(), Some("yes".into()))]
        );
        let graph = [edge("t", "c", None), edge("c", "s", Some("yes"))];
        assert_eq!(
            auto_connect(&steps, &graph),
            [("s".to_string(), None)],
            "an EXIT leads nowhere, but cannot lead on"
        );
        let with_wait = [step("t", "TRIGGER"), wait];
        assert_eq!(
            auto_connect(&with_wait, &[edge("t", "w", None)]),
            [("w".to_string(), Some("event".into())), ("w".to_string(), Some("timeout".into()))]
        );
        assert_eq!(auto_connect(&[step("e", "EXIT")], &[]), []);
    }
}
