//! Every rule and guard of the turn-taking controller, one scenario each: a floor, a script
//! for its agents, and the exact trace of actions expected.
//!
//! Trace lines: `start <message>`, `poll <candidates> (mentions …)`,
//! `call <agent> <wake reason> <- <initiator>`, `note …`, `end <reason>`, `queued <n>`,
//! `refused`. Rosters list agents in blueprint order, `*` marking `activation: always`.

use crate::common::{Scenario, floor};
use rstest::rstest;

#[rstest]
// ── requests and references ────────────────────────────────────────────────────────────────
#[case::request_wakes_the_agent_and_returns_to_user(
    floor("code data")
        .user("@code? write it")
        .says("code", &["done"])
        .expect(&["start @code? write it", "call code mentioned <- user", "end returned_to_user code"])
)]
#[case::reference_only_does_not_wake(
    floor("code data")
        .user("thanks @code")
        .expect(&["start thanks @code", "poll code data (mentions code)", "end no_one_woke"])
)]
#[case::request_is_case_insensitive_and_punctuated(
    floor("code data")
        .user("(@Data?), thoughts")
        .says("data", &["sure"])
        .expect(&["start (@Data?), thoughts", "call data mentioned <- user", "end returned_to_user data"])
)]
#[case::mention_in_code_is_not_a_request(
    floor("code data")
        .user("type `@code?` to ask\n```\n@data?\n```")
        .expect(&["start type `@code?` to ask\n```\n@data?\n```", "poll code data", "end no_one_woke"])
)]
#[case::email_address_is_not_a_mention(
    floor("code b")
        .user("write to code@b.com")
        .expect(&["start write to code@b.com", "poll code b", "end no_one_woke"])
)]
#[case::agent_reference_to_user_is_not_a_question(
    floor("a")
        .user("@a? go")
        .says("a", &["told @user the result"])
        .expect(&["start @a? go", "call a mentioned <- user", "end returned_to_user a"])
)]
// ── should-wake polling ────────────────────────────────────────────────────────────────────
#[case::no_one_wakes_then_floor_waits(
    floor("a b")
        .user("hello")
        .expect(&["start hello", "poll a b", "end no_one_woke"])
)]
#[case::empty_floor_has_no_one_to_wake(
    floor("")
        .user("hello")
        .expect(&["start hello", "end no_one_woke"])
)]
#[case::first_yes_in_blueprint_order_wins(
    floor("a b c")
        .user("anyone?")
        .wakes("b", &["y"])
        .wakes("c", &["y:me too"])
        .says("b", &["here"])
        .expect(&["start anyone?", "poll a b c", "call b should_wake", "poll a c", "end no_one_woke"])
)]
#[case::should_wake_reason_is_passed_on(
    floor("a")
        .user("data?")
        .wakes("a", &["y:data is my thing"])
        .says("a", &["on it"])
        .expect(&["start data?", "poll a", "call a should_wake(data is my thing)", "end no_one_woke"])
)]
#[case::polled_agent_is_followed_by_another_poll(
    floor("a b")
        .user("ideas?")
        .wakes("a", &["y", "n"])
        .wakes("b", &["n", "y"])
        .says("a", &["idea one"])
        .says("b", &["idea two"])
        .expect(&[
            "start ideas?",
            "poll a b",
            "call a should_wake",
            "poll b",
            "call b should_wake",
            "poll a",
            "end no_one_woke",
        ])
)]
#[case::late_failed_and_missing_answers_count_as_no(
    floor("a b c d")
        .user("who?")
        .wakes("a", &["late"])
        .wakes("b", &["fail"])
        .wakes("c", &["-"])
        .wakes("d", &["y"])
        .says("d", &["me"])
        .expect(&[
            "start who?",
            "poll a b c d",
            "note unanswered a late",
            "note unanswered b failed: boom",
            "note unanswered c missing",
            "call d should_wake",
            "poll a b c",
            "end no_one_woke",
        ])
)]
#[case::poll_tells_who_is_mentioned(
    floor("a b c")
        .user("what would @c and @b say")
        .expect(&["start what would @c and @b say", "poll a b c (mentions b c)", "end no_one_woke"])
)]
// ── activation: always ─────────────────────────────────────────────────────────────────────
#[case::seed_delegation_chain_with_always_agent(
    floor("data* code")
        .user("Analyze this dataset")
        .says("data", &["Let me check... @code? can you load it?", "It has 3 columns."])
        .says("code", &["loaded"])
        .expect(&[
            "start Analyze this dataset",
            "call data always",
            "call code mentioned <- data",
            "call data returned(code)",
            "poll code",
            "end no_one_woke",
        ])
)]
#[case::always_agent_wakes_after_earlier_agents_decline(
    floor("code data*")
        .user("hi")
        .says("data", &["hello"])
        .expect(&["start hi", "poll code", "call data always", "poll code", "end no_one_woke"])
)]
#[case::earlier_yes_beats_always_agent(
    floor("code data*")
        .user("hi")
        .wakes("code", &["y"])
        .says("code", &["hello"])
        .says("data", &["and hello"])
        .expect(&["start hi", "poll code", "call code should_wake", "call data always", "poll code", "end no_one_woke"])
)]
#[case::two_always_agents_stopped_by_pair_limit(
    floor("a* b*")
        .user("discuss")
        .says("a", &["a1", "a2", "a3", "a4"])
        .says("b", &["b1", "b2", "b3"])
        .expect(&[
            "start discuss",
            "call a always",
            "call b always",
            "call a always",
            "call b always",
            "call a always",
            "call b always",
            "call a always",
            "end pair_limit a b 6",
        ])
)]
#[case::two_always_agents_stopped_by_hop_limit(
    floor("a* b*")
        .pairs(100)
        .hops(5)
        .user("discuss")
        .says("a", &["a1", "a2", "a3"])
        .says("b", &["b1", "b2"])
        .expect(&[
            "start discuss",
            "call a always",
            "call b always",
            "call a always",
            "call b always",
            "call a always",
            "end hop_limit 5",
        ])
)]
#[case::always_agent_that_passed_is_skipped(
    floor("a* b")
        .user("hi")
        .says("a", &["!pass"])
        .wakes("b", &["y"])
        .says("b", &["hello"])
        .expect(&["start hi", "call a always", "note pass a", "poll b", "call b should_wake", "end no_one_woke"])
)]
// ── delegation and the call stack ──────────────────────────────────────────────────────────
#[case::delegation_chain_of_depth_three_unwinds(
    floor("a b c d")
        .user("@a? plan it")
        .says("a", &["@b? research", "final plan"])
        .says("b", &["@c? compute", "research done"])
        .says("c", &["42"])
        .expect(&[
            "start @a? plan it",
            "call a mentioned <- user",
            "call b mentioned <- a",
            "call c mentioned <- b",
            "call b returned(c) <- a",
            "call a returned(b) <- user",
            "end returned_to_user a",
        ])
)]
#[case::polled_agent_delegates_then_floor_polls_again(
    floor("a b")
        .user("help")
        .wakes("a", &["y"])
        .says("a", &["@b? check this", "checked"])
        .says("b", &["looks fine"])
        .expect(&[
            "start help",
            "poll a b",
            "call a should_wake",
            "call b mentioned <- a",
            "call a returned(b)",
            "poll b",
            "end no_one_woke",
        ])
)]
#[case::several_requests_answer_in_order_of_appearance(
    floor("a b c")
        .user("@b? and @a? please")
        .says("b", &["b here"])
        .says("a", &["a here"])
        .expect(&[
            "start @b? and @a? please",
            "call b mentioned <- user",
            "call a mentioned <- user",
            "end returned_to_user a",
        ])
)]
#[case::repeated_request_counts_once(
    floor("a b")
        .user("@a? @b? and again @A?")
        .says("a", &["a"])
        .says("b", &["b"])
        .expect(&[
            "start @a? @b? and again @A?",
            "call a mentioned <- user",
            "call b mentioned <- user",
            "end returned_to_user b",
        ])
)]
#[case::several_requests_from_an_agent_return_to_it_after_the_last(
    floor("lead a b")
        .user("@lead? go")
        .says("lead", &["@a? part one, @b? part two", "all done"])
        .says("a", &["one"])
        .says("b", &["two"])
        .expect(&[
            "start @lead? go",
            "call lead mentioned <- user",
            "call a mentioned <- lead",
            "call b mentioned <- lead",
            "call lead returned(b) <- user",
            "end returned_to_user lead",
        ])
)]
#[case::nested_delegation_inside_a_multi_request(
    floor("a b c")
        .user("@a? @b?")
        .says("a", &["@c? help me", "a done"])
        .says("c", &["c done"])
        .says("b", &["b done"])
        .expect(&[
            "start @a? @b?",
            "call a mentioned <- user",
            "call c mentioned <- a",
            "call a returned(c) <- user",
            "call b mentioned <- user",
            "end returned_to_user b",
        ])
)]
// ── passes ─────────────────────────────────────────────────────────────────────────────────
#[case::pass_then_fallback_to_polling(
    floor("a b c")
        .user("@a? help")
        .says("a", &["!pass not my area"])
        .wakes("c", &["y"])
        .says("c", &["I can"])
        .expect(&[
            "start @a? help",
            "call a mentioned <- user",
            "note pass a (not my area)",
            "poll b c",
            "call c should_wake <- user",
            "end returned_to_user c",
        ])
)]
#[case::pass_marker_text_is_a_pass(
    floor("a b")
        .user("@a? help")
        .says("a", &["  [PASS]\n"])
        .expect(&["start @a? help", "call a mentioned <- user", "note pass a", "poll b", "end no_one_woke"])
)]
#[case::pass_marker_inside_text_is_not_a_pass(
    floor("a b")
        .user("@a? help")
        .says("a", &["I would say [PASS] here"])
        .expect(&["start @a? help", "call a mentioned <- user", "end returned_to_user a"])
)]
#[case::passed_agent_is_excluded_from_later_polls(
    floor("a b")
        .user("hi")
        .wakes("a", &["y"])
        .says("a", &["!pass"])
        .wakes("b", &["n", "y"])
        .says("b", &["hello"])
        .expect(&["start hi", "poll a b", "call a should_wake", "note pass a", "poll b", "call b should_wake", "end no_one_woke"])
)]
#[case::passed_agent_can_still_be_requested(
    floor("a b")
        .user("hi")
        .wakes("a", &["y"])
        .wakes("b", &["n", "y"])
        .says("a", &["!pass", "fine by me"])
        .says("b", &["@a? your view?", "settled"])
        .expect(&[
            "start hi",
            "poll a b",
            "call a should_wake",
            "note pass a",
            "poll b",
            "call b should_wake",
            "call a mentioned <- b",
            "call b returned(a)",
            "end no_one_woke",
        ])
)]
#[case::delegate_passes_and_no_one_takes_over(
    floor("a b c")
        .user("@a? go")
        .says("a", &["@b? check", "checked myself"])
        .says("b", &["!pass"])
        .expect(&[
            "start @a? go",
            "call a mentioned <- user",
            "call b mentioned <- a",
            "note pass b",
            "poll c",
            "call a returned(b) <- user",
            "end returned_to_user a",
        ])
)]
#[case::delegate_passes_and_another_takes_over(
    floor("a b c")
        .user("@a? go")
        .says("a", &["@b? check", "thanks"])
        .says("b", &["!pass"])
        .wakes("c", &["y"])
        .says("c", &["checked"])
        .expect(&[
            "start @a? go",
            "call a mentioned <- user",
            "call b mentioned <- a",
            "note pass b",
            "poll c",
            "call c should_wake <- a",
            "call a returned(c) <- user",
            "end returned_to_user a",
        ])
)]
#[case::first_of_several_requested_passes_next_one_answers(
    floor("a b c")
        .user("@a? @b? opinions")
        .says("a", &["!pass"])
        .says("b", &["mine"])
        .expect(&[
            "start @a? @b? opinions",
            "call a mentioned <- user",
            "note pass a",
            "call b mentioned <- user",
            "end returned_to_user b",
        ])
)]
#[case::everyone_passes(
    floor("a b")
        .user("hi")
        .wakes("a", &["y"])
        .wakes("b", &["n", "y"])
        .says("a", &["!pass"])
        .says("b", &["[PASS]"])
        .expect(&[
            "start hi",
            "poll a b",
            "call a should_wake",
            "note pass a",
            "poll b",
            "call b should_wake",
            "note pass b",
            "end no_one_woke",
        ])
)]
// ── @user? and errors ──────────────────────────────────────────────────────────────────────
#[case::user_question_directly(
    floor("a")
        .user("@a? deploy")
        .says("a", &["which region, @user?"])
        .expect(&["start @a? deploy", "call a mentioned <- user", "end waiting_for_user a"])
)]
#[case::user_question_mid_chain(
    floor("a b c")
        .user("@a? analyze")
        .says("a", &["@b? load the file"])
        .says("b", &["@User? which file?"])
        .expect(&[
            "start @a? analyze",
            "call a mentioned <- user",
            "call b mentioned <- a",
            "end waiting_for_user b",
        ])
)]
#[case::user_question_wins_over_other_requests(
    floor("a b c")
        .user("@a? go")
        .says("a", &["@b? and @user? both please, also @c?"])
        .expect(&[
            "start @a? go",
            "call a mentioned <- user",
            "note dropped_for_user by a: b c",
            "end waiting_for_user a",
        ])
)]
#[case::next_user_message_after_question_is_a_fresh_turn(
    floor("a b")
        .user("@a? deploy")
        .says("a", &["which region, @user?"])
        .user("eu-west")
        .wakes("a", &["y"])
        .says("a", &["deploying to eu-west"])
        .expect(&[
            "start @a? deploy",
            "call a mentioned <- user",
            "end waiting_for_user a",
            "start eu-west",
            "poll a b",
            "call a should_wake",
            "poll b",
            "end no_one_woke",
        ])
)]
#[case::agent_error_returns_floor_to_user(
    floor("a")
        .user("@a? go")
        .says("a", &["!fail deadline exceeded"])
        .expect(&["start @a? go", "call a mentioned <- user", "end agent_error a: deadline exceeded"])
)]
#[case::agent_error_mid_chain_ends_turn(
    floor("a b")
        .user("@a? go")
        .says("a", &["@b? help"])
        .says("b", &["!fail connection refused"])
        .expect(&[
            "start @a? go",
            "call a mentioned <- user",
            "call b mentioned <- a",
            "end agent_error b: connection refused",
        ])
)]
// ── self-mentions and unknown agents ───────────────────────────────────────────────────────
#[case::agent_self_mention_is_ignored(
    floor("a b")
        .user("@a? go")
        .says("a", &["I (@a?) will handle it"])
        .expect(&["start @a? go", "call a mentioned <- user", "note self_mention a", "end returned_to_user a"])
)]
#[case::user_self_mention_is_ignored(
    floor("a")
        .user("@user? is me")
        .expect(&["start @user? is me", "note self_mention user", "poll a", "end no_one_woke"])
)]
#[case::self_mention_of_polled_agent_does_not_wake_it_again(
    floor("a b")
        .user("hi")
        .wakes("a", &["y"])
        .says("a", &["@a? yes me again"])
        .expect(&[
            "start hi",
            "poll a b",
            "call a should_wake",
            "note self_mention a",
            "poll b",
            "end no_one_woke",
        ])
)]
#[case::unknown_request_falls_back_to_polling(
    floor("code data")
        .user("@codr? help")
        .wakes("code", &["y"])
        .says("code", &["I think you meant me"])
        .expect(&[
            "start @codr? help",
            "note unknown codr by user",
            "poll code data",
            "call code should_wake",
            "poll data",
            "end no_one_woke",
        ])
)]
#[case::unknown_request_beside_a_known_one(
    floor("a")
        .user("@ghost? @a?")
        .says("a", &["here"])
        .expect(&["start @ghost? @a?", "note unknown ghost by user", "call a mentioned <- user", "end returned_to_user a"])
)]
#[case::agent_requesting_unknown_agent_returns_to_initiator(
    floor("a")
        .user("@a? go")
        .says("a", &["@ghost? help"])
        .expect(&["start @a? go", "call a mentioned <- user", "note unknown ghost by a", "end returned_to_user a"])
)]
// ── cycles ─────────────────────────────────────────────────────────────────────────────────
#[case::cycle_a_b_a_is_refused_and_returns(
    floor("a b")
        .user("@a? go")
        .says("a", &["@b? check", "all good"])
        .says("b", &["@a? done, over to you"])
        .expect(&[
            "start @a? go",
            "call a mentioned <- user",
            "call b mentioned <- a",
            "note cycle b -> a [a b]",
            "call a returned(b) <- user",
            "end returned_to_user a",
        ])
)]
#[case::cycle_a_b_a_ends_turn_under_end_turn_policy(
    floor("a b")
        .cycles_end_turn()
        .user("@a? go")
        .says("a", &["@b? check"])
        .says("b", &["@a? done, over to you"])
        .expect(&[
            "start @a? go",
            "call a mentioned <- user",
            "call b mentioned <- a",
            "note cycle b -> a [a b]",
            "end cycle_refused b a",
        ])
)]
#[case::deep_cycle_a_b_c_a_is_refused(
    floor("a b c")
        .user("@a? go")
        .says("a", &["@b? step", "finished"])
        .says("b", &["@c? step", "c said so"])
        .says("c", &["@a? what now?"])
        .expect(&[
            "start @a? go",
            "call a mentioned <- user",
            "call b mentioned <- a",
            "call c mentioned <- b",
            "note cycle c -> a [a b c]",
            "call b returned(c) <- a",
            "call a returned(b) <- user",
            "end returned_to_user a",
        ])
)]
#[case::refused_cycle_keeps_other_requests(
    floor("a b c")
        .user("@a? go")
        .says("a", &["@b? check", "ok"])
        .says("b", &["@a? and @c? look", "c looked"])
        .says("c", &["looked"])
        .expect(&[
            "start @a? go",
            "call a mentioned <- user",
            "call b mentioned <- a",
            "note cycle b -> a [a b]",
            "call c mentioned <- b",
            "call b returned(c) <- a",
            "call a returned(b) <- user",
            "end returned_to_user a",
        ])
)]
#[case::agent_woken_by_polling_is_on_the_stack_too(
    floor("a b")
        .user("hi")
        .wakes("a", &["y"])
        .says("a", &["@b? check", "done"])
        .says("b", &["@a? back to you"])
        .expect(&[
            "start hi",
            "poll a b",
            "call a should_wake",
            "call b mentioned <- a",
            "note cycle b -> a [a b]",
            "call a returned(b)",
            "poll b",
            "end no_one_woke",
        ])
)]
// ── hop and pair limits ────────────────────────────────────────────────────────────────────
#[case::hop_limit_stops_a_delegation_chain(
    floor("a b")
        .hops(2)
        .user("@a? go")
        .says("a", &["@b? help"])
        .says("b", &["done"])
        .expect(&["start @a? go", "call a mentioned <- user", "call b mentioned <- a", "end hop_limit 2"])
)]
#[case::hop_limit_is_checked_before_polling(
    floor("a b")
        .hops(1)
        .user("hi")
        .wakes("a", &["y"])
        .says("a", &["hello"])
        .expect(&["start hi", "poll a b", "call a should_wake", "end hop_limit 1"])
)]
#[case::hop_limit_counts_passes(
    floor("a b c")
        .hops(2)
        .user("@a? @b? @c?")
        .says("a", &["!pass"])
        .says("b", &["!pass"])
        .expect(&[
            "start @a? @b? @c?",
            "call a mentioned <- user",
            "note pass a",
            "call b mentioned <- user",
            "note pass b",
            "end hop_limit 2",
        ])
)]
#[case::pair_limit_stops_ping_pong_delegation(
    floor("a b")
        .pairs(2)
        .user("@a? go")
        .says("a", &["@b? try", "@b? try again"])
        .says("b", &["tried"])
        .expect(&[
            "start @a? go",
            "call a mentioned <- user",
            "call b mentioned <- a",
            "call a returned(b) <- user",
            "end pair_limit a b 2",
        ])
)]
#[case::pair_limit_is_per_pair(
    floor("a b c")
        .pairs(2)
        .user("@a? go")
        .says("a", &["@b? one", "@c? two", "@b? three"])
        .says("b", &["b"])
        .says("c", &["c"])
        .expect(&[
            "start @a? go",
            "call a mentioned <- user",
            "call b mentioned <- a",
            "call a returned(b) <- user",
            "call c mentioned <- a",
            "call a returned(c) <- user",
            "end pair_limit a b 2",
        ])
)]
#[case::limits_reset_with_each_user_message(
    floor("a b")
        .hops(2)
        .user("@a? one")
        .says("a", &["@b? x", "@b? y"])
        .says("b", &["b", "b again"])
        .user("@a? two")
        .expect(&[
            "start @a? one",
            "call a mentioned <- user",
            "call b mentioned <- a",
            "end hop_limit 2",
            "start @a? two",
            "call a mentioned <- user",
            "call b mentioned <- a",
            "end hop_limit 2",
        ])
)]
#[case::passes_reset_with_each_user_message(
    floor("a")
        .user("hi")
        .wakes("a", &["y", "y"])
        .says("a", &["!pass", "now I have something"])
        .user("hi again")
        .expect(&[
            "start hi",
            "poll a",
            "call a should_wake",
            "note pass a",
            "end no_one_woke",
            "start hi again",
            "poll a",
            "call a should_wake",
            "end no_one_woke",
        ])
)]
// ── one turn at a time ─────────────────────────────────────────────────────────────────────
#[case::user_message_mid_turn_is_queued(
    floor("a")
        .burst()
        .user("@a? first")
        .user("@a? second")
        .says("a", &["one", "two"])
        .expect(&[
            "start @a? first",
            "call a mentioned <- user",
            "queued 1",
            "end returned_to_user a",
            "start @a? second",
            "call a mentioned <- user",
            "end returned_to_user a",
        ])
)]
#[case::queued_messages_run_one_turn_after_another(
    floor("a")
        .burst()
        .user("@a? first")
        .user("second")
        .user("third")
        .says("a", &["one"])
        .expect(&[
            "start @a? first",
            "call a mentioned <- user",
            "queued 1",
            "queued 2",
            "end returned_to_user a",
            "start second",
            "poll a",
            "end no_one_woke",
            "start third",
            "poll a",
            "end no_one_woke",
        ])
)]
#[case::user_message_mid_turn_refused_when_queue_is_full(
    floor("a")
        .queue(0)
        .burst()
        .user("@a? first")
        .user("@a? second")
        .says("a", &["one"])
        .expect(&["start @a? first", "call a mentioned <- user", "refused", "end returned_to_user a"])
)]
fn scenario(#[case] floor: Scenario) {
    let trace = floor.run();
    assert_eq!(trace, floor.expect, "\ngot:\n{}\n", trace.join("\n"));
}
