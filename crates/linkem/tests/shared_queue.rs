//! The simulator's links and linkem's pipe make the same decisions on one shared trace of
//! arrivals with the same U[0, 1) draws: accept / mark / drop, and the same departure times
//! (issue #13: one queue model, `mpcc-queue`, behind both).
use linkem::{Pipe, PipeConfig, RedConfig, Verdict};
use mpcc_core::config::{LinkCfg, RedCfg};
use mpcc_core::sim::{replay_link, Decision};

/// xorshift64*: the draws both sides consume, in the same order.
fn draws(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed;
    move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Bursty arrivals at 1.5× the link rate on average: on/off periods of 5–80 packet times,
/// packets 0.2–1 service time apart while on, so the queue fills, drains and idles.
fn trace(n: usize, service_ns: u64) -> Vec<(u64, bool)> {
    let mut u = draws(99);
    let (mut t, mut out) = (0u64, Vec::with_capacity(n));
    while out.len() < n {
        let burst = 5 + (u() * 75.0) as usize;
        for _ in 0..burst {
            t += (service_ns as f64 * (0.2 + 0.8 * u())) as u64;
            out.push((t, u() < 0.7));
        }
        t += (service_ns as f64 * 60.0 * u()) as u64;
    }
    out.truncate(n);
    out
}

fn compare(red: Option<(f64, f64, f64, bool, bool)>, loss: f64, buffer: u32) -> (usize, usize, usize) {
    let (rate_mbps, delay_ms) = (12.0, 3.0); // 1500 B → 1 ms per packet
    let red_sim = red.map(|(min_th, max_th, max_p, gentle, ecn)| RedCfg { min_th, max_th, max_p, ecn, weight: 0.02, gentle });
    let cfg = LinkCfg { capacity_mbps: rate_mbps, delay_ms, buffer_pkts: buffer, red: red_sim, loss };
    let tr = trace(20_000, 1_000_000);
    let sim = replay_link(&cfg, 1500, &tr, draws(7)).unwrap();
    let mut pipe = Pipe::new(
        PipeConfig {
            rate_bps: Some(rate_mbps * 1e6),
            delay_ns: 3_000_000,
            buffer_pkts: buffer as usize,
            loss,
            red: red.map(|(min_th, max_th, max_p, gentle, ecn)| RedConfig { min_th, max_th, max_p, weight: 0.02, gentle, ecn }),
            drop_every: 0,
            drop_min_bytes: 0,
        },
        0,
    );
    let mut u = draws(7);
    let (mut marks, mut drops, mut accepts) = (0, 0, 0);
    for (k, (&(t, ect), s)) in tr.iter().zip(&sim).enumerate() {
        let l = pipe.arrive_with(t, 1500, ect, &mut u);
        match (l, *s) {
            (Verdict::Forward { release_ns, mark }, Decision::Accept { depart_ns, marked }) => {
                assert_eq!((release_ns, mark), (depart_ns + 3_000_000, marked), "arrival {k}");
                accepts += 1;
                marks += mark as usize;
            }
            (Verdict::DropLoss | Verdict::DropRed | Verdict::DropTail, Decision::Drop) => drops += 1,
            (l, s) => panic!("arrival {k} at {t} ns: linkem {l:?}, simulator {s:?}"),
        }
    }
    (accepts, marks, drops)
}

#[test]
fn drop_tail_with_loss_same_decisions() {
    let (a, _, d) = compare(None, 0.01, 20);
    assert!(a > 1000 && d > 1000, "the trace must exercise both: {a} accepted, {d} dropped");
}

#[test]
fn red_gentle_ecn_same_decisions() {
    let (a, m, d) = compare(Some((5.0, 15.0, 0.1, true, true)), 0.0, 60);
    assert!(a > 1000 && m > 100 && d > 100, "{a} accepted, {m} marked, {d} dropped");
}

#[test]
fn red_plain_with_loss_same_decisions() {
    let (a, m, d) = compare(Some((3.0, 10.0, 0.2, false, false)), 0.005, 25);
    assert!(a > 1000 && m == 0 && d > 100, "{a} accepted, {m} marked, {d} dropped");
}
