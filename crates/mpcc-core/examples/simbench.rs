//! Engine benchmark: `simbench CONFIG.json [REPEATS]` runs the JSON run description (as made
//! by `mpcc.sim.core_config`) and prints one JSON line per repeat: wall and CPU time, data packets,
//! events, packets per wall-clock second, peak resident memory (VmHWM) and a digest of every
//! output column (FNV-1a over names and values), so two builds can be checked for identical
//! results (`bench/sim/compare.py`).
use mpcc_core::run_json;
use mpcc_core::sim::{Column, Output};

/// FNV-1a (64 bit) over every column's name and little-endian values, in output order.
fn digest(out: &Output) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (name, col) in &out.columns {
        eat(name.as_bytes());
        match col {
            Column::F64(v) => v.iter().for_each(|x| eat(&x.to_bits().to_le_bytes())),
            Column::U64(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
            Column::U32(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
        }
    }
    h
}

fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .unwrap_or("0")
                    .parse()
                    .unwrap_or(0)
            })
        })
        .unwrap_or(0)
}

/// CPU time of this (single-threaded) process in seconds, from /proc/self/schedstat (ns).
fn cpu_s() -> f64 {
    std::fs::read_to_string("/proc/self/schedstat")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .next()
                .and_then(|x| x.parse::<f64>().ok())
        })
        .map(|ns| ns / 1e9)
        .unwrap_or(f64::NAN)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: simbench CONFIG.json [REPEATS]");
    let repeats: usize = args.next().map(|s| s.parse().unwrap()).unwrap_or(1);
    let cfg = std::fs::read_to_string(path).expect("config file");
    for _ in 0..repeats {
        let c0 = cpu_s();
        let t = std::time::Instant::now();
        let out = run_json(&cfg).expect("valid config");
        let wall = t.elapsed().as_secs_f64();
        let cpu = cpu_s() - c0;
        println!(
            "{{\"wall_s\": {wall:.6}, \"cpu_s\": {cpu:.6}, \"data_packets\": {}, \"events\": {}, \"packets_per_s\": {:.0}, \"packets_per_cpu_s\": {:.0}, \"peak_rss_kb\": {}, \"digest\": \"{:016x}\"}}",
            out.data_packets,
            out.events,
            out.data_packets as f64 / wall,
            out.data_packets as f64 / cpu,
            vm_hwm_kb(),
            digest(&out)
        );
    }
}
