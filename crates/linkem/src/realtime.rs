//! Real-time scheduling of the forwarding threads: SCHED_FIFO, memory locking, and the line
//! that reports what was granted.
/// Make the calling thread SCHED_FIFO at `priority`; Err(errno text) if not permitted.
pub(crate) fn set_fifo(priority: i32) -> Result<(), String> {
    let p = libc::sched_param { sched_priority: priority };
    let r = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &p) };
    if r == 0 { Ok(()) } else { Err(std::io::Error::from_raw_os_error(r).to_string()) }
}

/// Is capability number `cap` (linux/capability.h, e.g. 14 = CAP_IPC_LOCK) in our effective set?
pub(crate) fn has_capability(cap: u32) -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("CapEff:").map(|v| u64::from_str_radix(v.trim(), 16).ok())))
        .flatten()
        .is_some_and(|eff| eff >> cap & 1 == 1)
}

pub(crate) fn read_sysctl(name: &str) -> String {
    std::fs::read_to_string(format!("/proc/sys/{name}")).map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into())
}

/// The line that says what real-time scheduling the forwarding threads got.
pub(crate) fn note(realtime: bool, rt_priority: i32, fifo: &Result<(), String>, mlock: &Result<(), String>) -> String {
    if !realtime {
        "real-time off (--no-realtime): normal scheduling".to_string()
    } else {
        match (fifo, mlock) {
            (Ok(()), Ok(())) => format!(
                "real-time: forwarding threads SCHED_FIFO priority {}, memory locked (kernel RT limit {} of every {} µs)",
                rt_priority,
                read_sysctl("kernel/sched_rt_runtime_us"),
                read_sysctl("kernel/sched_rt_period_us")
            ),
            _ => {
                let why: Vec<String> = [fifo.as_ref().err().map(|e| format!("SCHED_FIFO: {e}")), mlock.as_ref().err().map(|e| format!("mlockall: {e}"))]
                    .into_iter()
                    .flatten()
                    .collect();
                format!(
                    "warning: real-time not permitted ({}); running with {} — releases can be late by the scheduler's \
                     wake-up latency when other work loads the CPU. Run as root (CAP_SYS_NICE, CAP_IPC_LOCK) for precise \
                     delays, or pass --no-realtime to silence this",
                    why.join(", "),
                    if fifo.is_ok() { "SCHED_FIFO but unlocked memory" } else { "normal scheduling" }
                )
            }
        }
    }
}
