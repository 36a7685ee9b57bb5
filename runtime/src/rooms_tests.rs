use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::*;
use crate::agent::FnAgent;
use crate::session::{Restored, SessionMeta, SessionStore};

/// Every respond call an agent got: (its floor, the messages' contents).
type Seen = Arc<Mutex<Vec<(String, Vec<String>)>>>;

struct Probe {
    seen: Seen,
    busy: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

/// An agent that answers `@<name> answered <n> messages` after 60 ms, recording what it was
/// sent and how many of its calls ran at once.
fn agent(name: &str) -> (FloorAgent, Probe) {
    let seen: Seen = Arc::default();
    let (busy, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let probe = Probe {
        seen: Arc::clone(&seen),
        busy: Arc::clone(&busy),
        most: Arc::clone(&most),
    };
    let me = name.to_owned();
    let f = FnAgent::new(name, move |r: RespondRequest| {
        let (seen, busy, most, me) = (
            Arc::clone(&seen),
            Arc::clone(&busy),
            Arc::clone(&most),
            me.clone(),
        );
        async move {
            let now = busy.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            let contents: Vec<String> = r.messages.iter().map(|m| m.content.clone()).collect();
            let n = contents.len();
            seen.lock().unwrap().push((r.floor_id.clone(), contents));
            tokio::time::sleep(Duration::from_millis(60)).await;
            busy.fetch_sub(1, Ordering::SeqCst);
            Ok(RespondResponse::reply(format!(
                "@{me} answered {n} messages"
            )))
        }
    });
    let handle = Handle::new(&format!("@{name}")).unwrap();
    (FloorAgent::new(handle, Arc::new(f)), probe)
}

fn everything(seen: &Seen) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .flat_map(|(_, c)| c.clone())
        .collect()
}

async fn until(what: &str, mut ok: impl FnMut() -> bool) {
    for _ in 0..400 {
        if ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

fn floor_of(agents: Vec<FloorAgent>) -> (Floor, Rooms) {
    let settings = FloorSettings::default();
    let main = Floor::open("f1", None, agents, settings.clone()).unwrap();
    let rooms = Rooms::new(main.clone(), settings, None);
    (main, rooms)
}

#[tokio::test]
async fn two_rooms_with_an_agent_in_both_keep_their_messages_apart() {
    let (a, pa) = agent("a");
    let (b, pb) = agent("b");
    let (c, pc) = agent("c");
    let (main, rooms) = floor_of(vec![a, b, c]);
    let mut events = rooms.subscribe();
    // @b is asked in both rooms at once: its calls take turns.
    rooms
        .open(
            "#left",
            &["@a".into(), "@b".into()],
            Some("@b? LEFT-SECRET".into()),
        )
        .await
        .unwrap();
    rooms
        .open(
            "#right",
            &["@b".into(), "@c".into()],
            Some("@b? RIGHT-SECRET".into()),
        )
        .await
        .unwrap();
    let mut closed = Vec::new();
    while closed.len() < 2 {
        let ev = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("both rooms close by themselves")
            .unwrap();
        if let RoomEvent::Closed { room, summary } = ev {
            closed.push((room, summary));
        }
    }
    closed.sort();
    assert_eq!(
        closed,
        [
            (
                "#left".to_owned(),
                "[Room #left closed] Last message from @b: @b answered 2 messages".to_owned()
            ),
            (
                "#right".to_owned(),
                "[Room #right closed] Last message from @b: @b answered 2 messages".to_owned()
            ),
        ]
    );
    assert_eq!(
        pb.most.load(Ordering::SeqCst),
        1,
        "@b was never in two turns at once"
    );
    assert_eq!(pb.busy.load(Ordering::SeqCst), 0);
    // @b answered in each room with that room's conversation only, and was told privately.
    let b_seen = pb.seen.lock().unwrap().clone();
    assert_eq!(b_seen.len(), 2, "{b_seen:?}");
    for (floor, contents) in &b_seen {
        let (mine, other) = if floor == "f1#left" {
            ("LEFT", "RIGHT")
        } else {
            assert_eq!(floor, "f1#right");
            ("RIGHT", "LEFT")
        };
        assert!(contents.iter().any(|c| c.contains(mine)), "{contents:?}");
        assert!(!contents.iter().any(|c| c.contains(other)), "{contents:?}");
        assert!(
            contents[0].starts_with("You moved to room #"),
            "{contents:?}"
        );
    }
    assert!(pa.seen.lock().unwrap().is_empty() && pc.seen.lock().unwrap().is_empty());

    // Back on #main: the summaries are public, each return note private to its agent.
    let said = main.messages(None, 100).await.unwrap();
    let public: Vec<&str> = said
        .iter()
        .filter(|m| m.metadata.is_none())
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(public.len(), 2, "{public:?}");
    assert!(public.iter().all(|p| p.starts_with("[Room #")));
    main.post("@c? what happened?").await.unwrap();
    until("@c answers on #main", || pc.seen.lock().unwrap().len() == 1).await;
    let c_main = pc.seen.lock().unwrap()[0].clone();
    assert_eq!(c_main.0, "f1");
    assert!(
        c_main.1.iter().all(|m| !m.contains("SECRET")),
        "nothing said inside a room reaches #main but its summary: {c_main:?}"
    );
    assert!(
        c_main
            .1
            .iter()
            .any(|m| m.starts_with("[Room #left closed]"))
    );
    assert!(
        c_main
            .1
            .contains(&"Room #right closed. You are back on the main floor (#main).".into())
    );
    assert!(
        !c_main.1.iter().any(|m| m.starts_with("Room #left closed.")),
        "@a's and @b's return notes are not @c's: {c_main:?}"
    );
}

#[tokio::test]
async fn main_does_not_call_agents_away_in_a_room() {
    let (a, pa) = agent("a");
    let (b, _pb) = agent("b");
    let (main, rooms) = floor_of(vec![a, b]);
    rooms.open("#quiet", &["@a".into()], None).await.unwrap();
    let mut events = main.subscribe();
    main.post("@a? are you there?").await.unwrap();
    loop {
        if let FloorEvent::TurnEnded { .. } = events.recv().await.unwrap() {
            break;
        }
    }
    assert!(pa.seen.lock().unwrap().is_empty(), "@a is in #quiet");
    assert_eq!(
        rooms.list(),
        [("#quiet".to_owned(), vec![Handle::new("@a").unwrap()])]
    );
    let summary = rooms.close("#quiet").await.unwrap();
    assert_eq!(summary, "[Room #quiet closed] No messages were exchanged.");
    main.post("@a? and now?").await.unwrap();
    until("@a answers on #main", || pa.seen.lock().unwrap().len() == 1).await;
}

#[tokio::test]
async fn bad_rooms_are_refused_with_what_is_wrong() {
    let (a, _) = agent("a");
    let (_main, rooms) = floor_of(vec![a]);
    let a = || vec!["@a".to_owned()];
    assert_eq!(
        rooms.open("#main", &a(), None).await,
        Err(RoomError::Reserved)
    );
    assert_eq!(
        rooms.open("#MAIN", &a(), None).await,
        Err(RoomError::Reserved)
    );
    for bad in [
        "design",
        "#",
        "#a b",
        "#../x",
        &format!("#{}", "x".repeat(33)),
    ] {
        assert!(
            matches!(
                rooms.open(bad, &a(), None).await,
                Err(RoomError::BadName(_))
            ),
            "{bad}"
        );
    }
    assert_eq!(
        rooms.open("#r", &["@zed".into()], None).await,
        Err(RoomError::UnknownAgent("@zed".into()))
    );
    assert_eq!(
        rooms.open("#r", &["not a handle".into()], None).await,
        Err(RoomError::UnknownAgent("not a handle".into()))
    );
    assert_eq!(
        rooms.open("#r", &[], None).await,
        Err(RoomError::NoMembers("#r".into()))
    );
    rooms.open("#r", &a(), None).await.unwrap();
    assert_eq!(
        rooms.open("#r", &a(), None).await,
        Err(RoomError::Exists("#r".into()))
    );
    assert_eq!(rooms.close("#main").await, Err(RoomError::Reserved));
    assert_eq!(
        rooms.close("#nope").await,
        Err(RoomError::NoSuchRoom("#nope".into()))
    );
    assert_eq!(
        RoomError::BadName("design".into()).to_string(),
        "`design` is not a room name: `#` then 1 to 32 letters, digits, `-` or `_` (such as #design)"
    );
}

#[tokio::test]
async fn a_session_reopens_its_open_rooms_and_replays_each_floor() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path(), "/p");
    let file = store.create(SessionMeta::default()).unwrap();
    let id = file.id().clone();
    let live = LiveSession::new(file);
    let (a, _pa) = agent("a");
    let (b, _pb) = agent("b");
    let settings = FloorSettings::default();
    let main = Floor::open_session(
        "f1",
        None,
        vec![a, b],
        settings.clone(),
        live.clone(),
        Vec::new(),
    )
    .unwrap();
    let rooms = Rooms::new(main.clone(), settings.clone(), Some(live.clone()));
    // No prompt: no turn ends in #kept, so it stays open.
    rooms.open("#kept", &["@a".into()], None).await.unwrap();
    rooms.open("#gone", &["@b".into()], None).await.unwrap();
    rooms.close("#gone").await.unwrap();
    main.post("on main").await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    rooms.shutdown().await;
    main.close().await.unwrap();
    drop((rooms, main, live));
    tokio::time::sleep(Duration::from_millis(50)).await;

    let log = store.read(&id).unwrap();
    let restored = Restored::from_log(&log);
    assert_eq!(
        restored.rooms.keys().collect::<Vec<_>>(),
        ["#kept"],
        "{:?}",
        log.problems
    );
    let kept = &restored.rooms["#kept"];
    assert_eq!(kept.members, ["@a"]);
    let moved = "You moved to room #kept alone. Messages here are private to this room; #main goes on without you until it closes.";
    assert!(kept.messages.iter().any(|m| m.content == moved));
    assert!(kept.messages.iter().all(|m| m.id.starts_with("msg-kept-")));
    assert!(restored.messages.iter().any(|m| m.content == "on main"));
    assert!(
        !restored.messages.iter().any(|m| m.content == moved),
        "#main's conversation holds #main's messages only"
    );
    assert_eq!(restored.segments, 1, "one run of the main floor");
    // Each floor (main, #kept, #gone) is a transcript segment of its own, each replayable.
    let segments = crate::session::restore::transcript_segments(&log).unwrap();
    assert_eq!(segments.len(), 3);
    for s in &segments {
        crate::transcript::replay(s).unwrap_or_else(|e| panic!("{e}"));
    }

    // Resumed: #kept comes back with @a in it, away from #main.
    let (file, log) = store.resume(&id).unwrap();
    let live = LiveSession::resumed(file, &log);
    let (a, pa) = agent("a");
    let (b, _) = agent("b");
    let main = Floor::open_session(
        "f2",
        None,
        vec![a, b],
        settings.clone(),
        live.clone(),
        restored.messages.clone(),
    )
    .unwrap();
    let rooms = Rooms::new(main.clone(), settings, Some(live));
    assert!(rooms.restore(restored.rooms.clone()).await.is_empty());
    assert_eq!(rooms.list().len(), 1);
    rooms
        .post("#kept", "@a? what was said here?".into())
        .await
        .unwrap();
    until("@a answers in #kept", || pa.seen.lock().unwrap().len() == 1).await;
    let (floor, contents) = pa.seen.lock().unwrap()[0].clone();
    assert_eq!(floor, "f2#kept");
    assert_eq!(contents[0], moved, "{contents:?}");
    assert!(!contents.contains(&"on main".to_owned()), "{contents:?}");
    assert!(everything(&pa.seen).iter().all(|c| !c.contains("#gone")));
}
