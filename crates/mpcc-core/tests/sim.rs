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
