//! AF_PACKET sockets: one raw socket per interface, batched reads (recvmmsg) with the kernel's
//! receive stamps, and the clocks.
pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub(crate) fn die(what: &str) -> ! {
    eprintln!("linkem: {what}: {}", std::io::Error::last_os_error());
    std::process::exit(1);
}

/// AF_PACKET raw socket bound to one interface, reading every frame that arrives on it.
pub(crate) fn packet_socket(ifname: &str, rcvbuf: usize) -> i32 {
    let cname = std::ffi::CString::new(ifname).unwrap();
    let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if ifindex == 0 {
        eprintln!("linkem: no interface {ifname:?} in this network namespace");
        std::process::exit(1);
    }
    // protocol 0 at creation: receive nothing until bound to the interface (no stray frames)
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        die("socket(AF_PACKET) (needs CAP_NET_RAW)");
    }
    let one: i32 = 1;
    let set = |level, opt, val: &[u8]| unsafe {
        libc::setsockopt(fd, level, opt, val.as_ptr() as *const libc::c_void, val.len() as u32)
    };
    // PACKET_IGNORE_OUTGOING (23): do not read back the frames we transmit on this interface
    if set(libc::SOL_PACKET, 23, &one.to_ne_bytes()) != 0 {
        die("PACKET_IGNORE_OUTGOING");
    }
    // PACKET_QDISC_BYPASS (20): hand frames straight to the driver (veth), no qdisc
    set(libc::SOL_PACKET, 20, &one.to_ne_bytes());
    // SO_TIMESTAMPNS (35, the timespec variant on 64-bit): the kernel's receive time of each
    // frame (CLOCK_REALTIME) comes with it as a control message
    set(libc::SOL_SOCKET, SO_TIMESTAMPNS, &one.to_ne_bytes());
    let rb = rcvbuf as i32;
    if set(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &rb.to_ne_bytes()) != 0 {
        set(libc::SOL_SOCKET, libc::SO_RCVBUF, &rb.to_ne_bytes());
    }
    set(libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &rb.to_ne_bytes());
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
    sll.sll_ifindex = ifindex as i32;
    let r = unsafe {
        libc::bind(fd, &sll as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_ll>() as u32)
    };
    if r != 0 {
        die("bind(AF_PACKET)");
    }
    // promiscuous: frames for the far end's MAC must reach us
    let mut mr: libc::packet_mreq = unsafe { std::mem::zeroed() };
    mr.mr_ifindex = ifindex as i32;
    mr.mr_type = libc::PACKET_MR_PROMISC as u16;
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            &mr as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::packet_mreq>() as u32,
        )
    };
    fd
}

pub(crate) const BATCH: usize = 32;
pub(crate) const SLOT: usize = 65536;
pub(crate) const SO_TIMESTAMPNS: i32 = 35; // SO_TIMESTAMPNS_OLD = SCM_TIMESTAMPNS (struct timespec)
pub(crate) const CTRL: usize = 64;

pub(crate) struct Rx {
    pub(crate) fd: i32,
    pub(crate) bufs: Vec<Vec<u8>>,
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    ctrl: Vec<[u64; CTRL / 8]>,
}

// SAFETY: the raw pointers in `iov`/`hdrs` point into the heap buffers of `bufs`, `iov` and
// `ctrl`, which move with the struct (a Vec's heap block stays put); `read` re-points them before
// every call. An Rx is built on the main thread and then used by exactly one forwarding thread.
unsafe impl Send for Rx {}

impl Rx {
    pub(crate) fn new(fd: i32) -> Self {
        let mut bufs: Vec<Vec<u8>> = (0..BATCH).map(|_| vec![0u8; SLOT]).collect();
        let mut iov: Vec<libc::iovec> = bufs
            .iter_mut()
            .map(|b| libc::iovec { iov_base: b.as_mut_ptr() as *mut libc::c_void, iov_len: SLOT })
            .collect();
        let hdrs = iov
            .iter_mut()
            .map(|v| {
                let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
                h.msg_hdr.msg_iov = v as *mut libc::iovec;
                h.msg_hdr.msg_iovlen = 1;
                h
            })
            .collect();
        Rx { fd, bufs, iov, hdrs, ctrl: vec![[0u64; CTRL / 8]; BATCH] }
    }

    /// Non-blocking batch read; returns the number of frames now in `bufs[..n]` with lengths
    /// and their kernel receive stamps (CLOCK_REALTIME ns; 0 if the kernel gave none).
    pub(crate) fn read(&mut self, lens: &mut [usize; BATCH], stamps: &mut [u64; BATCH]) -> usize {
        for ((h, v), c) in self.hdrs.iter_mut().zip(self.iov.iter_mut()).zip(self.ctrl.iter_mut()) {
            h.msg_hdr.msg_iov = v as *mut libc::iovec;
            h.msg_hdr.msg_control = c.as_mut_ptr() as *mut libc::c_void;
            h.msg_hdr.msg_controllen = CTRL;
            h.msg_len = 0;
        }
        let n = unsafe {
            libc::recvmmsg(self.fd, self.hdrs.as_mut_ptr(), BATCH as u32, libc::MSG_DONTWAIT, std::ptr::null_mut())
        };
        if n <= 0 {
            return 0;
        }
        for i in 0..n as usize {
            lens[i] = (self.hdrs[i].msg_len as usize).min(SLOT);
            stamps[i] = 0;
            let m = &self.hdrs[i].msg_hdr;
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(m);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == SO_TIMESTAMPNS {
                        let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                        stamps[i] = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
                    }
                    c = libc::CMSG_NXTHDR(m, c);
                }
            }
        }
        n as usize
    }
}

pub(crate) fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
