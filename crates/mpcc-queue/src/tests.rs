//! The queue model's one test suite (the simulator and linkem only add their glue tests).
use super::*;

fn red(gentle: bool, ecn: bool) -> RedParams {
    RedParams {
        min_th: 5.0,
        max_th: 15.0,
        max_p: 0.1,
        weight: 0.5,
        gentle,
        ecn,
    }
}

fn at(queue: u32, now_ns: u64) -> Arrival {
    Arrival {
        queue,
        now_ns,
        empty_since_ns: 0,
        service_ns: 1000.0,
        ect: false,
    }
}

fn never() -> f64 {
    panic!("no draw expected")
}

#[test]
fn drop_tail_holds_the_buffer() {
    let mut q = Queue::new(3, None).unwrap();
    assert_eq!(q.arrive(at(2, 0), never), Verdict::Accept);
    assert_eq!(q.arrive(at(3, 0), never), Verdict::Drop(Drop::Tail));
    assert_eq!(q.arrive(at(7, 0), never), Verdict::Drop(Drop::Tail));
}

/// avg ← (1 − w)avg + w·q with w = 0.5: q = 4, 4, 8 → 2, 3, 5.5.
#[test]
fn average_is_the_ewma_of_arrivals() {
    let mut q = Queue::new(100, Some(red(true, false))).unwrap();
    q.arrive(at(4, 0), never);
    assert_eq!(q.avg(), 2.0);
    q.arrive(at(4, 0), never);
    assert_eq!(q.avg(), 3.0);
    q.arrive(at(8, 0), || 0.99); // 5.5 ≥ min_th: one draw
    assert_eq!(q.avg(), 5.5);
}

/// Idle for 3 service times: avg·(1 − w)^(3+1) (ns-2's m + 1); a second arrival to the
/// still-empty queue (the first was dropped) decays only over the time since the first.
#[test]
fn idle_decay_counts_m_plus_one_once() {
    let mut q = Queue::new(100, Some(red(true, false))).unwrap();
    q.red.as_mut().unwrap().1.avg = 32.0;
    let a = Arrival {
        queue: 0,
        now_ns: 13_000,
        empty_since_ns: 10_000,
        service_ns: 1000.0,
        ect: false,
    };
    q.arrive(a, never); // 32·0.5^4 = 2 < min_th: no draw
    assert_eq!(q.avg(), 2.0);
    q.arrive(
        Arrival {
            now_ns: 20_000,
            ..a
        },
        never,
    );
    assert_eq!(
        q.avg(),
        2.0 / 256.0,
        "7 more service times: 0.5^8, not a decay over all 10"
    );
    q.arrive(
        Arrival {
            now_ns: 30_000,
            empty_since_ns: 25_000,
            ..a
        },
        never,
    );
    assert_eq!(
        q.avg(),
        2.0 / 256.0 / 64.0,
        "a new idle period of 5 service times: 0.5^6"
    );
}

/// Early region: p_b = max_p (avg − min_th)/(max_th − min_th), p_a = p_b/(1 − count·p_b).
#[test]
fn early_drop_probability_follows_the_count_rule() {
    let mut q = Queue::new(
        1000,
        Some(RedParams {
            weight: 1.0,
            ..red(false, false)
        }),
    )
    .unwrap();
    // avg = q = 10: p_b = 0.1·5/10 = 0.05. count 0 → p_a = 0.05; the draw 0.049 drops.
    assert_eq!(q.arrive(at(10, 0), || 0.049), Verdict::Drop(Drop::Red));
    assert_eq!(q.red.as_ref().unwrap().1.count, 0);
    // count 1: p_a = 0.05/0.95 = 0.05263…; 0.052 drops, 0.053 would not.
    assert_eq!(q.arrive(at(10, 0), || 0.06), Verdict::Accept);
    assert_eq!(q.arrive(at(10, 0), || 0.0555), Verdict::Drop(Drop::Red)); // count 2: 0.05/0.9
                                                                          // count 19 = 1/p_b − 1: 1 − count·p_b ≤ p_b, so after 18 survivors the next arrival drops
                                                                          // whatever the draw
    for _ in 0..18 {
        assert_eq!(q.arrive(at(10, 0), || 0.9999), Verdict::Accept);
    }
    assert_eq!(q.arrive(at(10, 0), || 0.9999), Verdict::Drop(Drop::Red));
}

/// Gentle region: p_b = max_p + (1 − max_p)(avg − max_th)/max_th; beyond 2·max_th (or max_th
/// without gentle) every packet is dropped, ECN-capable or not, without a draw.
#[test]
fn gentle_and_forced_regions() {
    let mk = |gentle| {
        Queue::new(
            1000,
            Some(RedParams {
                weight: 1.0,
                ..red(gentle, true)
            }),
        )
        .unwrap()
    };
    // avg 22: p_b = 0.1 + 0.9·7/15 = 0.52, and p_a = p_b at count 0
    let mut q = mk(true);
    assert_eq!(
        q.arrive(
            Arrival {
                ect: true,
                ..at(22, 0)
            },
            || 0.519
        ),
        Verdict::Mark
    );
    let mut q = mk(true);
    assert_eq!(
        q.arrive(
            Arrival {
                ect: true,
                ..at(22, 0)
            },
            || 0.521
        ),
        Verdict::Accept
    );
    // the same early decision drops a packet that is not ECN-capable
    let mut q = mk(true);
    assert_eq!(q.arrive(at(22, 0), || 0.519), Verdict::Drop(Drop::Red));
    // forced region (avg ≥ 2·max_th = 30): ECT packets are dropped too, no draw
    assert_eq!(
        q.arrive(
            Arrival {
                ect: true,
                ..at(30, 0)
            },
            never
        ),
        Verdict::Drop(Drop::Red)
    );
    // without gentle it starts at max_th
    let mut q = mk(false);
    assert_eq!(
        q.arrive(
            Arrival {
                ect: true,
                ..at(15, 0)
            },
            never
        ),
        Verdict::Drop(Drop::Red)
    );
}

/// The average runs before the hard limit: an arrival to a full buffer moves it, and is a
/// tail drop even when RED would have accepted or marked it.
#[test]
fn tail_drop_after_red() {
    let mut q = Queue::new(4, Some(red(true, true))).unwrap();
    assert_eq!(q.arrive(at(4, 0), never), Verdict::Drop(Drop::Tail));
    assert_eq!(q.avg(), 2.0);
    let mut q = Queue::new(
        12,
        Some(RedParams {
            weight: 1.0,
            ..red(true, true)
        }),
    )
    .unwrap();
    assert_eq!(
        q.arrive(
            Arrival {
                ect: true,
                ..at(12, 0)
            },
            || 0.0
        ),
        Verdict::Drop(Drop::Tail)
    );
    assert_eq!(q.red.as_ref().unwrap().1.count, 0);
}

/// Early drops over many arrivals at a fixed average. FJ93 Fig. 2 increments count before
/// p_a = p_b/(1 − count·p_b), so after a drop the k-th arrival survives with
/// Π_{j≤k}(1 − p_b/(1 − j p_b)) = (1 − (k+1)p_b)/(1 − p_b); with n = 1/p_b an integer the mean
/// gap is Σ_{k=0}^{n−1} (1 − (k+1)p_b)/(1 − p_b) = ((n − 1)/2)/((n − 1)/n) = n/2, so the drop
/// rate is 2·p_b (not p_b: the count rule spreads drops evenly and caps the gap at n).
#[test]
fn early_drop_rate_matches_the_count_rule() {
    let mut q = Queue::new(
        1000,
        Some(RedParams {
            weight: 1.0,
            ..red(false, false)
        }),
    )
    .unwrap();
    let mut s = 0x1234_5678_9abc_def0u64;
    let mut uniform = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let n = 200_000;
    let drops = (0..n)
        .filter(|_| q.arrive(at(10, 0), &mut uniform) == Verdict::Drop(Drop::Red))
        .count();
    let pb = 0.05;
    let want = 2.0 * pb;
    let got = drops as f64 / n as f64;
    assert!((got - want).abs() < 0.02 * want, "{got} vs {want}");
}

#[test]
fn bad_parameters_name_the_field() {
    let bad = |f: fn(&mut RedParams)| {
        let mut p = red(true, true);
        f(&mut p);
        Queue::new(10, Some(p)).unwrap_err()
    };
    assert!(bad(|p| p.min_th = -1.0).starts_with("min_th:"));
    assert!(bad(|p| p.max_th = 5.0).starts_with("max_th:"));
    assert!(bad(|p| p.max_p = 0.0).starts_with("max_p:"));
    assert!(bad(|p| p.weight = f64::NAN).starts_with("weight:"));
}
