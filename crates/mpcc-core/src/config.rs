//! The run description the Python layer hands to the engine (JSON, see
//! `python/mpcc/sim/engine.py`): the scenario with link names resolved to indices, plus the
//! seed, the sampling interval, the measurement window and the `[sim]` options.
use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    pub duration_s: f64,
    #[serde(default = "d_packet_bytes")]
    pub packet_bytes: u32,
    #[serde(default)]
    pub seed: u64,
    /// Time-series sampling interval; 0 disables sampling.
    #[serde(default)]
    pub sample_interval_s: f64,
    /// Measurement window [t0, t1] of the summary rates.
    pub measure: (f64, f64),
    pub links: Vec<LinkCfg>,
    pub groups: Vec<GroupCfg>,
    #[serde(default)]
    pub background: Vec<BackgroundCfg>,
    #[serde(default)]
    pub options: Options,
    /// Event budget of the run (default: from the scenario, see `sim::budget`).
    #[serde(default)]
    pub max_events: Option<u64>,
    /// Memory budget of the run, MiB (default `sim::budget::DEFAULT_MAX_MEMORY_MB`).
    #[serde(default)]
    pub max_memory_mb: Option<f64>,
}

fn d_packet_bytes() -> u32 {
    1500
}

#[derive(Debug, Clone, Deserialize)]
pub struct LinkCfg {
    pub capacity_mbps: f64,
    /// One-way propagation delay.
    pub delay_ms: f64,
    pub buffer_pkts: u32,
    #[serde(default)]
    pub red: Option<RedCfg>,
    #[serde(default)]
    pub loss: f64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RedCfg {
    pub min_th: f64,
    pub max_th: f64,
    pub max_p: f64,
    #[serde(default)]
    pub ecn: bool,
    #[serde(default = "d_weight")]
    pub weight: f64,
    #[serde(default = "d_true")]
    pub gentle: bool,
}

impl RedCfg {
    /// The shared queue model's parameters.
    pub fn to_queue(&self) -> mpcc_queue::RedParams {
        mpcc_queue::RedParams {
            min_th: self.min_th,
            max_th: self.max_th,
            max_p: self.max_p,
            weight: self.weight,
            gentle: self.gentle,
            ecn: self.ecn,
        }
    }
}

fn d_weight() -> f64 {
    0.002
}
fn d_true() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
pub struct GroupCfg {
    pub algorithm: String,
    #[serde(default)]
    pub params: Map<String, Value>,
    pub count: u32,
    /// One route per path, each a list of link indices.
    pub paths: Vec<Vec<u32>>,
    #[serde(default)]
    pub start_s: f64,
    pub stop_s: f64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct BackgroundCfg {
    pub path: Vec<u32>,
    pub rate_mbps: f64,
    pub mean_on_s: f64,
    pub mean_off_s: f64,
    #[serde(default)]
    pub start_s: f64,
    pub stop_s: f64,
}

/// The `[sim]` table of a scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// Flow start times are start_s + U[0, start_jitter_s) (desynchronises identical flows).
    pub start_jitter_s: f64,
    /// Initial window (Linux: 10).
    pub initial_cwnd: f64,
    /// Minimum retransmission timeout (Linux: 200 ms).
    pub rto_min_s: f64,
    /// Delayed ACKs: one ACK per two in-order segments, at most `delayed_ack_s` late.
    pub delayed_ack: bool,
    pub delayed_ack_s: f64,
    /// Linux 3.x (e.g. the 3.11.8 kernel of Peng et al.; acked packets are counted in slow start
    /// since 3.18 and in congestion avoidance since 4.0): slow start and congestion
    /// avoidance add one increment per ACK, however many packets it acknowledges, instead of
    /// one per acknowledged packet. OLIA always does (mptcp_olia.c ignores `acked`).
    pub per_ack_increase: bool,
    /// Linux before 4.3 (`tcp_in_slow_start`): slow start while cwnd ≤ ssthresh, so the first
    /// ACK after a loss adds a whole packet; otherwise while cwnd < ssthresh. OLIA always
    /// tests ≤ (mptcp_olia.c).
    pub slow_start_at_ssthresh: bool,
    /// Random host processing delay U[0, host_jitter_s) added to every ACK (breaks the phase
    /// effects of a deterministic simulation).
    pub host_jitter_s: f64,
    /// Packets are ECN-capable (RED links with ecn = true mark instead of dropping).
    pub ecn: bool,
    /// The MPTCP connection level: `Ideal` (unlimited buffers, every subflow always has data)
    /// or `Linux` (upstream 6.x's send buffer, scheduler, DATA_ACK and shared receive window:
    /// `sim/mptcp_linux.rs`).
    pub mptcp: MptcpMode,
    /// net.ipv4.tcp_wmem (min, default, max), bytes: used by the `Linux` connection level.
    pub tcp_wmem: [f64; 3],
    /// net.ipv4.tcp_rmem (min, default, max), bytes: used by the `Linux` connection level.
    pub tcp_rmem: [f64; 3],
    /// The congestion control's `sndbuf_expand` (`Linux` connection level): `Kernel` (none:
    /// the kernel's factor 2, as the testbed loads the programs by default) or `Mpcc` (the
    /// programs built with MPCC_BPF_CONN=sndbuf: bpf/include/mpcc_conn.h).
    pub sndbuf_expand: SndbufExpand,
    /// `per_mss` of the kernel's `tcp_sndbuf_expand`, bytes (`Linux` connection level):
    /// roundup_pow_of_two(mss + MAX_TCP_HEADER + SKB_DATA_ALIGN(sizeof(skb_shared_info))) +
    /// SKB_DATA_ALIGN(sizeof(struct sk_buff)) for a 1460-byte MSS. MAX_TCP_HEADER depends on the
    /// kernel's configuration (measured, bench/kernel/RESULTS.md §26–27): 4352 on Debian's generic
    /// and rt x86-64 kernels (the default), 2304 on Debian's cloud kernels and the testbed's 6.18.
    /// The testbed measures the running kernel's (`mpcc.testbed.tcpmem.kernel_sndbuf_per_mss`).
    pub sndbuf_per_mss: f64,
    /// The receivers' ACK policy: `Auto` (`Linux` with the linux connection level, else
    /// `Simple`), `Simple` (every segment at once, or the `delayed_ack` rule) or `Linux` (every
    /// receiver runs the delayed-ACK engine of a Linux TCP socket, `sim/receiver.rs`).
    pub receiver: Receiver,
    /// Tail loss probes (RFC 8985 §7; `tcp_schedule_loss_probe`, `tcp_send_loss_probe`,
    /// `tcp_process_tlp_ack`): `Auto` (on with the linux connection level, as every socket of
    /// the testbed has them), `On` or `Off` (the papers' TCP: a tail loss waits for the RTO).
    pub tlp: Tlp,
    /// The application's send timeout (`SO_SNDTIMEO`), seconds (`Linux` connection level): a
    /// writer that waits for send-buffer room gives up after this long (`sk_stream_wait_memory`
    /// returns, `mptcp_sendmsg` returns what it copied) and writes again at once into whatever
    /// room there is (`sk_stream_memory_free`). 0 (the default): no timeout, the writer sleeps
    /// until a third of the buffer is free. The testbed's sender times out every 0.2 s, which
    /// keeps its buffer fuller but leaves its rates as they are (bench/kernel/RESULTS.md §35).
    pub writer_wait_s: f64,
}

/// `[sim] tlp`: whether senders send tail loss probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Tlp {
    #[default]
    Auto,
    On,
    Off,
}

/// `[sim] receiver`: the receivers' ACK policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Receiver {
    #[default]
    Auto,
    Simple,
    Linux,
}

/// The default `per_mss` of `tcp_sndbuf_expand` ([`Options::sndbuf_per_mss`]) for a 1460-byte
/// MSS: 4096 + 256, measured on Debian's generic 6.1 and 6.12 kernels (`make kernels`).
pub const SNDBUF_PER_MSS: f64 = 4352.0;

/// `[sim] sndbuf_expand`: the factor tcp_sndbuf_expand() sizes a subflow's send buffer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SndbufExpand {
    #[default]
    Kernel,
    Mpcc,
}

/// `[sim] mptcp`: which MPTCP connection level the simulator models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum MptcpMode {
    #[default]
    Ideal,
    Linux,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            start_jitter_s: 1.0,
            initial_cwnd: 10.0,
            rto_min_s: 0.2,
            delayed_ack: false,
            delayed_ack_s: 0.04,
            per_ack_increase: false,
            slow_start_at_ssthresh: false,
            host_jitter_s: 0.001,
            ecn: true,
            mptcp: MptcpMode::Ideal,
            receiver: Receiver::Auto,
            tlp: Tlp::Auto,
            // the testbed's sysctls (python/mpcc/testbed/topology.py)
            tcp_wmem: [4096.0, 262144.0, 33554432.0],
            tcp_rmem: [4096.0, 262144.0, 33554432.0],
            sndbuf_expand: SndbufExpand::Kernel,
            sndbuf_per_mss: SNDBUF_PER_MSS,
            writer_wait_s: 0.0,
        }
    }
}

/// Parse a JSON run description. Errors name the field (`groups[0].count: ...`), so that the
/// Python layer can report the scenario field behind them.
pub fn parse(json: &str) -> Result<Config, String> {
    let v: Value = serde_json::from_str(json).map_err(|e| format!("bad simulator config: {e}"))?;
    check_integers(&v)?;
    serde_json::from_value(v).map_err(|e| format!("bad simulator config: {e}"))
}

/// The integer fields and their ranges, checked before serde (whose errors name no field).
fn check_integers(v: &Value) -> Result<(), String> {
    let int = |x: &Value, field: String, max: u64| -> Result<(), String> {
        match x.as_u64() {
            Some(n) if n <= max => Ok(()),
            _ => Err(format!(
                "{field}: {x} is not a whole number from 0 to {max}"
            )),
        }
    };
    let arr = |x: Option<&Value>| x.and_then(|a| a.as_array()).cloned().unwrap_or_default();
    let u32m = u32::MAX as u64;
    if let Some(x) = v.get("packet_bytes") {
        int(x, "packet_bytes".into(), 65_535)?;
    }
    if let Some(x) = v.get("seed") {
        int(x, "seed".into(), u64::MAX)?;
    }
    if let Some(x) = v.get("max_events") {
        int(x, "max_events".into(), u64::MAX)?;
    }
    for (i, l) in arr(v.get("links")).iter().enumerate() {
        if let Some(x) = l.get("buffer_pkts") {
            int(x, format!("links[{i}].buffer_pkts"), u32m)?;
        }
    }
    for (i, g) in arr(v.get("groups")).iter().enumerate() {
        if let Some(x) = g.get("count") {
            int(x, format!("groups[{i}].count"), u32m)?;
        }
        for (j, p) in arr(g.get("paths")).iter().enumerate() {
            for (k, x) in arr(Some(p)).iter().enumerate() {
                int(x, format!("groups[{i}].paths[{j}][{k}]"), u32m)?;
            }
        }
    }
    for (i, b) in arr(v.get("background")).iter().enumerate() {
        for (k, x) in arr(b.get("path")).iter().enumerate() {
            int(x, format!("background[{i}].path[{k}]"), u32m)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse;

    /// Integers out of range name their field instead of serde's "expected u32 at line 1 column N".
    #[test]
    fn integer_errors_name_the_field() {
        let cfg = |count: &str| {
            format!(
                r#"{{"duration_s": 1, "measure": [0, 1],
                "links": [{{"capacity_mbps": 10, "delay_ms": 1, "buffer_pkts": 10}}],
                "groups": [{{"algorithm": "reno", "count": {count}, "paths": [[0]], "stop_s": 1}}]}}"#
            )
        };
        let e = parse(&cfg("1000000000000")).err().unwrap();
        assert!(e.starts_with("groups[0].count: 1000000000000"), "{e}");
        assert!(parse(&cfg("-1"))
            .err()
            .unwrap()
            .starts_with("groups[0].count:"));
        assert!(parse(&cfg("2.5"))
            .err()
            .unwrap()
            .starts_with("groups[0].count:"));
        assert!(parse(&cfg("3")).is_ok());
        let e = parse(&cfg("3").replace("[[0]]", "[[4294967296]]"))
            .err()
            .unwrap();
        assert!(e.starts_with("groups[0].paths[0][0]:"), "{e}");
    }
}
