//! The command line: flags (unchanged: the testbed, `python/mpcc/testbed`, passes them), their
//! checks (bad values exit 2 with one line naming the flag) and the two directions' pipes.
use clap::Parser;
use linkem::{PipeConfig, RedConfig};

#[derive(Parser, Debug)]
#[command(name = "linkem", about = "Dummynet-style link emulator between two interfaces (AF_PACKET)")]
pub(crate) struct Args {
    /// Input interface of the forward (shaped) direction, e.g. the client side.
    #[arg(long = "in")]
    pub(crate) in_if: String,
    /// Output interface of the forward direction, e.g. the server side.
    #[arg(long = "out")]
    pub(crate) out_if: String,
    /// Forward bandwidth in Mb/s (IP bytes); 0 = unlimited.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) rate_mbps: f64,
    /// Forward one-way delay in ms.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) delay_ms: f64,
    /// Forward buffer in packets (queue + in service).
    #[arg(long, default_value_t = 50)]
    pub(crate) buffer_pkts: usize,
    /// Forward random loss probability.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) loss: f64,
    /// Forward deterministic loss: drop every N-th packet of at least --drop-min-bytes (IP
    /// length); 0 = off.
    #[arg(long, default_value_t = 0)]
    pub(crate) drop_every: u64,
    /// Smallest IP length --drop-every counts (default 200: data segments, not ACKs or SYNs).
    #[arg(long, default_value_t = 200)]
    pub(crate) drop_min_bytes: usize,
    /// Reverse one-way delay in ms (default: same as --delay-ms).
    #[arg(long)]
    pub(crate) rev_delay_ms: Option<f64>,
    /// Reverse bandwidth in Mb/s; 0 = unlimited (delay only).
    #[arg(long, default_value_t = 0.0)]
    pub(crate) rev_rate_mbps: f64,
    /// Reverse buffer in packets.
    #[arg(long, default_value_t = 100_000)]
    pub(crate) rev_buffer_pkts: usize,
    /// Enable RED on the forward queue with these thresholds (packets of average queue).
    #[arg(long)]
    pub(crate) red_min_th: Option<f64>,
    #[arg(long)]
    pub(crate) red_max_th: Option<f64>,
    #[arg(long, default_value_t = 0.1)]
    pub(crate) red_max_p: f64,
    #[arg(long, default_value_t = 0.002)]
    pub(crate) red_weight: f64,
    /// Disable gentle RED.
    #[arg(long)]
    pub(crate) red_no_gentle: bool,
    /// Mark CE on ECN-capable packets instead of early drops.
    #[arg(long)]
    pub(crate) red_ecn: bool,
    /// Seed of the loss/RED random numbers.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Write periodic stats (CSV) to this file.
    #[arg(long)]
    pub(crate) stats: Option<String>,
    #[arg(long, default_value_t = 100)]
    pub(crate) stats_interval_ms: u64,
    /// Minimum busy-wait before each release instant, µs (timing accuracy vs CPU); the spin
    /// adapts to the measured wake-up latency between this and --spin-max-us.
    #[arg(long, default_value_t = 30)]
    pub(crate) spin_us: u64,
    /// Upper bound of the adaptive busy-wait (µs): linkem raises the spin up to this when its
    /// timed sleeps wake late (halted vCPUs of an idle VM wake 50–150 µs late).
    #[arg(long, default_value_t = 200)]
    pub(crate) spin_max_us: u64,
    /// Run the forwarding threads SCHED_FIFO and lock memory (mlockall) — the default; when
    /// not permitted (needs root/CAP_SYS_NICE) linkem warns and runs with normal scheduling.
    #[arg(long = "realtime", overrides_with = "no_realtime")]
    pub(crate) realtime: bool,
    /// Normal scheduling for the forwarding threads, no memory locking.
    #[arg(long = "no-realtime", overrides_with = "realtime")]
    pub(crate) no_realtime: bool,
    /// SCHED_FIFO priority of the forwarding threads with --realtime (1–99).
    #[arg(long, default_value_t = 10)]
    pub(crate) rt_priority: i32,
    /// Write release-timing quantiles (JSON) of both directions to this file at exit.
    #[arg(long)]
    pub(crate) timing: Option<String>,
    /// Forwarding threads: 1 = one thread serves both directions (default: on a small machine
    /// two real-time threads that each spin before their releases take every CPU), 2 = one
    /// thread per direction.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub(crate) threads: u8,
    /// Socket receive buffer per interface, bytes.
    #[arg(long, default_value_t = 8 << 20)]
    pub(crate) rcvbuf: usize,
}

impl Args {
    /// The forward and reverse pipes, or exit 2 naming the bad flag.
    pub(crate) fn pipes(&self) -> (PipeConfig, PipeConfig) {
        let a = self;
        let check = |ok: bool, msg: &str| {
            if !ok {
                eprintln!("linkem: {msg}");
                std::process::exit(2);
            }
        };
        check(a.rate_mbps >= 0.0 && a.rev_rate_mbps >= 0.0, "rates must be ≥ 0");
        check(a.delay_ms >= 0.0 && a.rev_delay_ms.unwrap_or(0.0) >= 0.0, "delays must be ≥ 0");
        check((0.0..1.0).contains(&a.loss), "--loss must be in [0, 1)");
        check(a.buffer_pkts >= 1, "--buffer-pkts must be ≥ 1");
        let red = match (a.red_min_th, a.red_max_th) {
            (Some(min_th), Some(max_th)) => {
                check(min_th < max_th, "--red-min-th must be < --red-max-th");
                check(a.red_max_p > 0.0 && a.red_max_p <= 1.0, "--red-max-p must be in (0, 1]");
                check(a.red_weight > 0.0 && a.red_weight <= 1.0, "--red-weight must be in (0, 1]");
                let red = RedConfig { min_th, max_th, max_p: a.red_max_p, weight: a.red_weight, gentle: !a.red_no_gentle, ecn: a.red_ecn };
                // the queue model's own check (e.g. a negative or infinite threshold)
                if let Err(e) = red.validate() {
                    check(false, &format!("--red-{}", e.replacen('_', "-", 1)));
                }
                Some(red)
            }
            (None, None) => None,
            _ => {
                check(false, "give both --red-min-th and --red-max-th");
                None
            }
        };
        let rate = |m: f64| if m > 0.0 { Some(m * 1e6) } else { None };
        let fwd = PipeConfig {
            rate_bps: rate(a.rate_mbps),
            delay_ns: (a.delay_ms * 1e6).round() as u64,
            buffer_pkts: a.buffer_pkts,
            loss: a.loss,
            red,
            drop_every: a.drop_every,
            drop_min_bytes: a.drop_min_bytes,
        };
        let rev = PipeConfig {
            rate_bps: rate(a.rev_rate_mbps),
            delay_ns: (a.rev_delay_ms.unwrap_or(a.delay_ms) * 1e6).round() as u64,
            buffer_pkts: a.rev_buffer_pkts,
            loss: 0.0,
            red: None,
            drop_every: 0,
            drop_min_bytes: 0,
        };
        let realtime = !a.no_realtime;
        check(!realtime || (1..=99).contains(&a.rt_priority), "--rt-priority must be in 1..=99");
        let _ = realtime;
        (fwd, rev)
    }
}
