//! Engine checks in Rust (the Python suite `tests/sim/` has the scenario-level ones).
use mpcc_core::run_json;

fn one_link(algo: &str, count: u32, buffer: u32, extra: &str) -> String {
    format!(
        r#"{{"duration_s": 30, "seed": 7, "measure": [10, 30], "sample_interval_s": 0.01,
        "links": [{{"capacity_mbps": 10, "delay_ms": 10, "buffer_pkts": {buffer} {extra}}}],
        "groups": [{{"algorithm": "{algo}", "count": {count}, "paths": [[0]], "start_s": 0, "stop_s": 30}}]}}"#
    )
}

#[test]
fn reno_fills_the_link_and_respects_the_buffer() {
    let out = run_json(&one_link("reno", 3, 40, "")).unwrap();
    // 10 Mb/s of 1500-byte packets for 20 s = 16 667 packets
    let delivered: u64 = out.u64("sf_delivered").iter().sum();
    assert!(delivered as f64 >= 0.9 * 16_667.0, "{delivered}");
    assert_eq!(out.u32("link_max_queue")[0], 40);
    assert!(out.u32("ts_queue").iter().all(|&q| q <= 40));
    assert!(out.u64("link_drops")[0] > 0);
}

#[test]
fn same_seed_same_output() {
    let cfg = one_link("balia", 4, 30, "");
    let (a, b) = (run_json(&cfg).unwrap(), run_json(&cfg).unwrap());
    assert_eq!(a.events, b.events);
    assert_eq!(a.u64("sf_delivered"), b.u64("sf_delivered"));
    assert_eq!(a.f64("ts_cwnd"), b.f64("ts_cwnd"));
}

#[test]
fn ecn_marks_replace_drops_on_red_links() {
    let red = r#", "red": {"min_th": 5, "max_th": 15, "max_p": 0.1, "ecn": true}"#;
    let out = run_json(&one_link("reno", 2, 100, red)).unwrap();
    assert!(out.u64("link_marks")[0] > 0);
    assert_eq!(out.u64("link_drops")[0], 0);
    assert_eq!(out.u64("sf_retrans").iter().sum::<u64>(), 0);
}

#[test]
fn bad_config_is_an_error_not_a_panic() {
    let cfg = one_link("reno", 1, 10, "").replace("[[0]]", "[[3]]");
    assert!(run_json(&cfg).is_err());
    assert!(run_json(&one_link("cubic", 1, 10, "")).is_err());
    assert!(run_json("{}").is_err());
}

/// Every feature at once on a small network, for every algorithm: multi-hop paths, RED with and
/// without ECN, random loss, delayed ACKs, host jitter, background traffic, flows that start
/// and stop. Checks conservation: a link never accepts more than it can send, and no subflow
/// delivers more than it sent. (Run in debug mode too: integer overflow checks.)
#[test]
fn stress_all_features_every_algorithm() {
    let algos = [
        ("reno", "{}"),
        ("ewtcp", "{}"),
        ("coupled", "{}"),
        ("semicoupled", "{}"),
        ("lia", "{}"),
        ("olia", "{}"),
        ("olia", r#"{"per_ack": 1}"#),
        ("balia", "{}"),
        ("generalized", r#"{"beta": 0.5, "eta": 1.0, "n": 2}"#),
        ("mstcp", "{}"),
        ("fully-coupled", "{}"),
        ("fast", r#"{"alpha": 20, "adapt_interval_s": 2.0}"#),
    ];
    for (k, (algo, params)) in algos.iter().enumerate() {
        for delayed in [false, true] {
            let cfg = format!(
                r#"{{"duration_s": 20, "seed": {k}, "measure": [5, 20], "sample_interval_s": 0.5,
                "links": [
                  {{"capacity_mbps": 20, "delay_ms": 2, "buffer_pkts": 30}},
                  {{"capacity_mbps": 5, "delay_ms": 20, "buffer_pkts": 60,
                    "red": {{"min_th": 5, "max_th": 20, "max_p": 0.1, "ecn": true}}}},
                  {{"capacity_mbps": 8, "delay_ms": 5, "buffer_pkts": 40, "loss": 0.005,
                    "red": {{"min_th": 5, "max_th": 30, "max_p": 0.2, "ecn": false, "gentle": false}}}}],
                "groups": [
                  {{"algorithm": "{algo}", "params": {params}, "count": 3, "paths": [[0, 1], [0, 2], [2]],
                    "start_s": 0, "stop_s": 20}},
                  {{"algorithm": "reno", "count": 2, "paths": [[1]], "start_s": 3, "stop_s": 12}}],
                "background": [{{"path": [0, 2], "rate_mbps": 3, "mean_on_s": 0.3, "mean_off_s": 0.5,
                                 "start_s": 1, "stop_s": 18}}],
                "options": {{"delayed_ack": {delayed}, "host_jitter_s": 0.0005}}}}"#
            );
            let out = run_json(&cfg).unwrap_or_else(|e| panic!("{algo}: {e}"));
            let caps = [20.0, 5.0, 8.0];
            for (l, acc) in out.u64("link_accepted").iter().enumerate() {
                let max_pkts = caps[l] * 1e6 / 12_000.0 * 15.0;
                assert!(
                    (*acc as f64) <= max_pkts * 1.01 + 100.0,
                    "{algo}: link {l} accepted {acc}"
                );
            }
            for (d, s) in out.u64("sf_delivered").iter().zip(out.u64("sf_sent")) {
                assert!(d <= &(s + 200), "{algo}: delivered {d} > sent {s}");
            }
            let total: u64 = out.u64("sf_delivered").iter().sum();
            assert!(total > 1000, "{algo}: only {total} packets delivered");
        }
    }
}
