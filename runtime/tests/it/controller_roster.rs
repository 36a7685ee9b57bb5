//! Changing a controller's roster between turns.

use runtime::{Action, AgentSpec, Controller, Error, Event, Handle, Limits, TurnId};

fn spec(name: &str) -> AgentSpec {
    AgentSpec::mention(Handle::new(name).unwrap())
}

#[test]
fn the_roster_changes_between_turns_only_and_ids_keep_counting() {
    let mut controller = Controller::new(vec![spec("a")], Limits::default()).unwrap();
    let actions = controller.handle(Event::UserMessage {
        content: "@a? hi".into(),
    });
    let Some(Action::Respond { call, .. }) = actions.get(1) else {
        panic!("{actions:?}");
    };
    let call = *call;
    assert_eq!(
        controller.set_roster(vec![spec("a"), spec("b")]),
        Err(Error::TurnInProgress)
    );
    controller.handle(Event::AgentResponded {
        call,
        agent: Handle::new("a").unwrap(),
        content: "done".into(),
    });
    assert!(controller.is_idle());
    assert_eq!(
        controller.set_roster(vec![spec("b"), spec("b")]),
        Err(Error::DuplicateAgent(Handle::new("b").unwrap()))
    );
    assert_eq!(
        controller.set_roster(vec![spec("user")]),
        Err(Error::ReservedHandle(Handle::user()))
    );
    controller.set_roster(vec![spec("a"), spec("b")]).unwrap();
    let actions = controller.handle(Event::UserMessage {
        content: "@b? you are new".into(),
    });
    match actions.as_slice() {
        [
            Action::TurnStarted { turn, .. },
            Action::Respond {
                call: second,
                agent,
                ..
            },
        ] => {
            assert_eq!(*turn, TurnId(2));
            assert_eq!(agent.as_str(), "b");
            assert!(second.0 > call.0, "call ids restarted");
        }
        other => panic!("{other:?}"),
    }
}
