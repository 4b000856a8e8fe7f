//! The socket: a non-blocking UDP socket with batched receive (`recvmmsg`, GRO where the
//! kernel has it) and ECN read through `quinn-udp`, DSCP and ECN set through the socket's
//! TOS (`socket2`), and `poll(2)` to wait for a datagram or a deadline.
//!
//! Why `quinn-udp`: it is the socket layer of quinn, maintained for exactly this job
//! (`recvmmsg`/`sendmmsg`, UDP GSO/GRO, ECN codepoints in control messages, per-kernel
//! fallbacks), so slacknet carries its own `unsafe` cmsg code for one thing only (below).
//! Sending: a run of datagrams of one size to one destination goes out in one `sendmsg` with
//! UDP GSO, from one contiguous buffer through `quinn-udp` ([`Socket::send_run`]), or from
//! slices (headers here, payloads where the application left them) through our own `sendmsg`
//! with the `UDP_SEGMENT` control message ([`Socket::send_run_gather`]: quinn-udp's `Transmit`
//! takes one slice, and copying payloads into one was a fifth of an ATP sender's thread). Both
//! without an ECN control message (quinn-udp's would replace the whole TOS byte, DSCP
//! included): the socket's TOS carries the DSCP and ECT(0) (DSCP << 2 | ECT(0)), set when the
//! DSCP changes.
//!
//! Receiving: this kernel reports no ECN codepoint for a GRO-coalesced batch (a datagram read
//! alone has its codepoint); `Received::ecn` is then `None`, and a switch's CE mark on such a
//! batch is not seen. The node marks CE itself when its own receive queue is long
//! ([`Socket::backlog_bytes`]).
//!
//! What the kernel lacks is found once, at bind, and reported in [`Capabilities`].

use std::io::{self, IoSlice, IoSliceMut};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use quinn_udp::{RecvMeta, Transmit, UdpSockRef, UdpSocketState};

/// Bytes of one receive buffer: the largest datagram, or a GRO batch of them.
pub const RECV_BUF_BYTES: usize = 64 * 1024;
/// Receive buffers per batch.
pub const RECV_BATCH: usize = 32;
/// The socket buffer sizes asked for (the kernel may grant less).
pub const SOCKET_BUFFER_BYTES: usize = 8 << 20;

/// ECT(0), the ECN-capable codepoint the transports send with.
const ECT0: u8 = 0b10;

/// What the kernel offers, found at bind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Datagrams one send may carry (UDP GSO); 1 without it.
    pub gso_segments: usize,
    /// Datagrams one receive may coalesce (UDP GRO); 1 without it.
    pub gro_segments: usize,
    /// Whether setting the TOS byte (DSCP and ECN) worked.
    pub has_tos: bool,
    /// The send and receive buffer sizes granted.
    pub send_buffer_bytes: usize,
    /// See `send_buffer_bytes`.
    pub recv_buffer_bytes: usize,
}

/// One received datagram's metadata; its bytes are `Socket::datagram(i)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// Sender.
    pub peer: SocketAddr,
    /// ECN codepoint it arrived with (0: not ECT, 1: ECT(1), 2: ECT(0), 3: CE), if known.
    pub ecn: Option<u8>,
    /// The local address it was sent to, where the socket is bound to the unspecified address
    /// (0.0.0.0 or ::) and the kernel says (IP_PKTINFO): a reply must come from it, or the peer
    /// (which knows this host by that address) cannot tell whose it is.
    pub dst: Option<IpAddr>,
    /// Buffer index and byte range of the datagram.
    buf: usize,
    start: usize,
    end: usize,
}

/// The socket (module docs).
pub struct Socket {
    sock: UdpSocket,
    state: UdpSocketState,
    caps: Capabilities,
    tos: Option<u8>,
    bufs: Vec<Vec<u8>>,
    meta: Vec<RecvMeta>,
    received: Vec<Received>,
    /// Times the kernel refused a GSO send and the socket fell back to datagrams one by one.
    gso_fallbacks: u64,
    /// Bound to the unspecified address: datagrams' destination addresses are reported.
    wildcard: bool,
}

impl std::fmt::Debug for Socket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Socket").field("local", &self.sock.local_addr().ok()).field("caps", &self.caps).finish()
    }
}

impl Socket {
    /// Bind to `addr` (port 0: any free port), non-blocking, with large buffers.
    pub fn bind(addr: SocketAddr) -> io::Result<Socket> {
        let sock = UdpSocket::bind(addr)?;
        let state = UdpSocketState::new(UdpSockRef::from(&sock))?;
        sock.set_nonblocking(true)?;
        let sref = UdpSockRef::from(&sock);
        // Best effort: the kernel caps these at net.core.{w,r}mem_max.
        let _ = state.set_send_buffer_size(sref, SOCKET_BUFFER_BYTES);
        let sref = UdpSockRef::from(&sock);
        let _ = state.set_recv_buffer_size(sref, SOCKET_BUFFER_BYTES);
        let send_buffer_bytes = state.send_buffer_size(UdpSockRef::from(&sock)).unwrap_or(0);
        let recv_buffer_bytes = state.recv_buffer_size(UdpSockRef::from(&sock)).unwrap_or(0);
        let caps = Capabilities {
            gso_segments: state.max_gso_segments(),
            gro_segments: state.gro_segments(),
            has_tos: false,
            send_buffer_bytes,
            recv_buffer_bytes,
        };
        let mut s = Socket {
            sock,
            state,
            caps,
            tos: None,
            bufs: vec![vec![0u8; RECV_BUF_BYTES]; RECV_BATCH],
            meta: vec![RecvMeta::default(); RECV_BATCH],
            received: Vec::with_capacity(RECV_BATCH * 4),
            gso_fallbacks: 0,
            wildcard: addr.ip().is_unspecified(),
        };
        s.caps.has_tos = s.set_dscp(0).is_ok();
        Ok(s)
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// What the kernel offers (GSO reads 1 once a send fell back, see
    /// [`Socket::gso_fallbacks`]).
    pub fn capabilities(&self) -> Capabilities {
        self.caps
    }

    /// Times the kernel refused a GSO send (then GSO is off for good: datagrams go one by one).
    pub fn gso_fallbacks(&self) -> u64 {
        self.gso_fallbacks
    }

    /// Send with this DSCP from now on (and ECT(0)).
    fn set_dscp(&mut self, dscp: u8) -> io::Result<()> {
        let tos = (dscp << 2) | ECT0;
        if self.tos == Some(tos) {
            return Ok(());
        }
        let s = socket2::SockRef::from(&self.sock);
        match self.sock.local_addr()? {
            SocketAddr::V4(_) => s.set_tos_v4(u32::from(tos))?,
            SocketAddr::V6(_) => s.set_tclass_v6(u32::from(tos))?,
        }
        self.tos = Some(tos);
        Ok(())
    }

    /// Send one datagram with `dscp`, from the local address `src` if given (a reply:
    /// [`Received::dst`]). `Ok(false)`: the socket buffer is full (try again after
    /// [`Socket::wait`] says it is writable).
    pub fn send(&mut self, dest: SocketAddr, src: Option<IpAddr>, bytes: &[u8], dscp: u8) -> io::Result<bool> {
        if self.caps.has_tos {
            // A failure here leaves the previous TOS; the datagram still goes out.
            let _ = self.set_dscp(dscp);
        }
        let sent = if src.is_some() {
            let t = Transmit { destination: dest, ecn: None, contents: bytes, segment_size: None, src_ip: src };
            self.state.try_send(UdpSockRef::from(&self.sock), &t).map(|()| bytes.len())
        } else {
            self.sock.send_to(bytes, dest)
        };
        match sent {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The most datagrams one [`Socket::send_run`] call may carry: the kernel's GSO limit, and
    /// 64 KiB of UDP payload in all.
    pub fn max_run(&self, segment: usize) -> usize {
        self.caps.gso_segments.max(1).min(65_507 / segment.max(1)).max(1)
    }

    /// Send `contents`, datagrams of `segment` bytes each (the last may be shorter), to
    /// `dest` (from `src`, as [`Socket::send`]) with `dscp`: in one GSO `sendmsg` where the kernel has GSO, else one by one. `Ok(false)`: the socket buffer is full and nothing was sent (try
    /// again after [`Socket::wait`] says it is writable). PRECONDITION: at most
    /// [`Socket::max_run`] datagrams.
    pub fn send_run(&mut self, dest: SocketAddr, src: Option<IpAddr>, contents: &[u8], segment: usize, dscp: u8) -> io::Result<bool> {
        let n = contents.len().div_ceil(segment.max(1));
        if n <= 1 || self.caps.gso_segments <= 1 {
            // One by one; a full buffer midway leaves the rest unsent (reported as lost by
            // the caller's protocol, as any drop).
            for d in contents.chunks(segment.max(1)) {
                if !self.send(dest, src, d, dscp)? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        debug_assert!(n <= self.max_run(segment));
        if self.caps.has_tos {
            // A failure here leaves the previous TOS; the datagrams still go out.
            let _ = self.set_dscp(dscp);
        }
        let t = Transmit {
            destination: dest,
            // No ECN control message: quinn-udp's would replace the whole TOS byte (and this
            // kernel delivered GSO runs sent with it as not-ECT); the socket's TOS carries
            // the DSCP and ECT(0).
            ecn: None,
            contents,
            segment_size: Some(segment),
            src_ip: src,
        };
        match self.state.try_send(UdpSockRef::from(&self.sock), &t) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => {
                // A kernel that refuses GSO here: fall back to datagrams one by one for good.
                if e.raw_os_error() == Some(libc::EIO) || e.raw_os_error() == Some(libc::EINVAL) {
                    self.caps.gso_segments = 1;
                    self.gso_fallbacks += 1;
                    return self.send_run(dest, src, contents, segment, dscp);
                }
                Err(e)
            }
        }
    }

    /// As [`Socket::send_run`], with the run's bytes given as slices in order (`len` bytes in
    /// all), so that a payload goes from the application's buffer to the kernel without a copy
    /// into a send buffer first (the kernel cuts GSO segments every `segment` bytes of the
    /// whole, wherever the slices end). PERF: that copy was a fifth of an ATP sender's thread
    /// (`make bench-udp` under perf). Here quinn-udp is bypassed (its `Transmit` takes one
    /// contiguous slice) for one `sendmsg` with the `UDP_SEGMENT` control message; where the
    /// kernel has no GSO, or refuses it, the slices are copied and go through `send_run`.
    pub fn send_run_gather(
        &mut self,
        dest: SocketAddr,
        src: Option<IpAddr>,
        slices: &[IoSlice<'_>],
        len: usize,
        segment: usize,
        dscp: u8,
    ) -> io::Result<bool> {
        let n = len.div_ceil(segment.max(1));
        #[cfg(target_os = "linux")]
        if self.caps.gso_segments > 1 && len > 0 {
            debug_assert!(n <= self.max_run(segment));
            if self.caps.has_tos {
                // A failure here leaves the previous TOS; the datagrams still go out.
                let _ = self.set_dscp(dscp);
            }
            match gso_sendmsg(&self.sock, dest, src, slices, if n > 1 { Some(segment) } else { None }) {
                Ok(()) => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if n > 1 && (e.raw_os_error() == Some(libc::EIO) || e.raw_os_error() == Some(libc::EINVAL)) => {
                    // A kernel that refuses GSO here: datagrams one by one for good (below).
                    self.caps.gso_segments = 1;
                    self.gso_fallbacks += 1;
                }
                Err(e) => return Err(e),
            }
        }
        let flat: Vec<u8> = slices.iter().flat_map(|s| s.iter().copied()).collect();
        self.send_run(dest, src, &flat, segment, dscp)
    }

    /// Receive what is waiting, up to one batch (GRO batches split into datagrams). Returns the
    /// datagrams' metadata; read each one's bytes with [`Socket::datagram`].
    pub fn recv(&mut self) -> io::Result<&[Received]> {
        self.received.clear();
        let n = {
            let mut slices: Vec<IoSliceMut<'_>> = self.bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
            match self.state.recv(UdpSockRef::from(&self.sock), &mut slices, &mut self.meta) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
                Err(e) => return Err(e),
            }
        };
        for (i, m) in self.meta.iter().take(n).enumerate() {
            let stride = m.stride.max(1);
            let dst = if self.wildcard { m.dst_ip } else { None };
            if m.len == 0 {
                // An empty datagram is a datagram too (counted, then refused as malformed).
                self.received.push(Received { peer: m.addr, ecn: m.ecn.map(|e| e as u8), dst, buf: i, start: 0, end: 0 });
            }
            let mut start = 0;
            while start < m.len {
                let end = (start + stride).min(m.len);
                self.received.push(Received { peer: m.addr, ecn: m.ecn.map(|e| e as u8), dst, buf: i, start, end });
                start = end;
            }
        }
        Ok(&self.received)
    }

    /// Bytes the kernel holds in this socket's receive queue (its `sk_rmem_alloc`, from
    /// `SO_MEMINFO`: buffer sizes as the kernel counts them, overhead included), or `None`
    /// where the kernel cannot say. The receive queue is a queue like a switch port's: the
    /// node marks what it reads as congestion-experienced when this exceeds a threshold
    /// (`NodeConfig::receive_mark_bytes`).
    pub fn backlog_bytes(&self) -> Option<u64> {
        #[cfg(target_os = "linux")]
        {
            // SO_MEMINFO (Linux 3.10+): an array of SK_MEMINFO_* counters, RMEM_ALLOC first.
            // Not in the libc crate; 55 on every Linux architecture.
            const SO_MEMINFO: libc::c_int = 55;
            let mut info = [0u32; 16];
            let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
            // SAFETY: a valid fd, a buffer of `len` bytes that the kernel fills at most to
            // `len`, and `len` updated in place.
            let r = unsafe {
                libc::getsockopt(
                    self.sock.as_raw_fd(),
                    libc::SOL_SOCKET,
                    SO_MEMINFO,
                    info.as_mut_ptr().cast(),
                    &mut len,
                )
            };
            if r == 0 && len as usize >= 4 {
                return Some(u64::from(info[libc::SK_MEMINFO_RMEM_ALLOC as usize]));
            }
        }
        None
    }

    /// The bytes of a datagram [`Socket::recv`] returned.
    pub fn datagram(&self, r: &Received) -> &[u8] {
        &self.bufs[r.buf][r.start..r.end]
    }

    /// Wait until a datagram can be read (or, with `writable`, sent), at most `timeout`, or
    /// until `waker` is woken (which this resets). Returns whether the socket is ready.
    pub fn wait(&self, timeout: Duration, writable: bool, waker: Option<&Waker>) -> io::Result<bool> {
        let mut fds = [
            libc::pollfd { fd: self.sock.as_raw_fd(), events: if writable { libc::POLLOUT } else { libc::POLLIN }, revents: 0 },
            libc::pollfd { fd: waker.map_or(-1, |w| w.fd.as_raw_fd()), events: libc::POLLIN, revents: 0 },
        ];
        // ppoll: nanosecond timeouts (a paced sender waits microseconds; poll's are whole ms).
        let ts = libc::timespec {
            tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
        };
        // SAFETY: two pollfds (a negative fd is ignored by the kernel) and their count, a
        // valid timespec, no signal mask; ppoll keeps no pointer.
        let r = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(e) };
        }
        if fds[1].revents != 0 {
            if let Some(w) = waker {
                w.reset();
            }
        }
        Ok(fds[0].revents != 0)
    }
}

/// Wakes a thread waiting in [`Socket::wait`] from another thread (an `eventfd`): the node's
/// application side wakes its loop when it hands it a command, so a send starts at once
/// instead of at the loop's next timer.
#[derive(Debug)]
pub struct Waker {
    fd: std::os::fd::OwnedFd,
}

impl Waker {
    /// A new waker.
    pub fn new() -> io::Result<Waker> {
        // SAFETY: eventfd takes two integers and returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        Ok(Waker { fd: unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) } })
    }

    /// Wake the waiting thread (or the next wait, if none waits now).
    pub fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to an eventfd. A full counter (EAGAIN)
        // means a wake is pending already.
        unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    fn reset(&self) {
        let mut n: u64 = 0;
        // SAFETY: reads 8 bytes into a valid u64; non-blocking (EAGAIN when nothing is pending).
        unsafe { libc::read(self.fd.as_raw_fd(), (&mut n as *mut u64).cast(), 8) };
    }
}

/// `UDP_SEGMENT` (linux/udp.h; not in the libc crate for glibc): the GSO segment size.
#[cfg(target_os = "linux")]
const UDP_SEGMENT: libc::c_int = 103;

/// One `sendmsg` of `slices` to `dest`, cut into datagrams of `segment` bytes by the kernel
/// (UDP GSO) when given, else one datagram; from the local address `src` when given (an
/// `IP_PKTINFO` / `IPV6_PKTINFO` control message, as quinn-udp sends a reply).
#[cfg(target_os = "linux")]
fn gso_sendmsg(sock: &UdpSocket, dest: SocketAddr, src: Option<IpAddr>, slices: &[IoSlice<'_>], segment: Option<usize>) -> io::Result<()> {
    let addr = socket2::SockAddr::from(dest);
    let seg = segment.map(u16::try_from).transpose().map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // Room for a u16 and an in6_pktinfo, each with its header, 8-byte aligned.
    let mut control = [0u64; 12];
    // SAFETY: msghdr is plain data; all-zero is a valid empty header.
    let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
    hdr.msg_name = addr.as_ptr() as *mut libc::c_void;
    hdr.msg_namelen = addr.len();
    // IoSlice is ABI-compatible with iovec on Unix (std's documented guarantee).
    hdr.msg_iov = slices.as_ptr() as *mut libc::iovec;
    hdr.msg_iovlen = slices.len() as _;
    let space = |bytes: usize| {
        // SAFETY: CMSG_SPACE only computes a size.
        unsafe { libc::CMSG_SPACE(bytes as u32) as usize }
    };
    let src_len = match src {
        Some(IpAddr::V4(_)) => std::mem::size_of::<libc::in_pktinfo>(),
        Some(IpAddr::V6(_)) => std::mem::size_of::<libc::in6_pktinfo>(),
        None => 0,
    };
    let total = seg.map_or(0, |_| space(2)) + src.map_or(0, |_| space(src_len));
    if total == 0 {
        // SAFETY: as below, without control messages.
        let r = unsafe { libc::sendmsg(sock.as_raw_fd(), &hdr, 0) };
        return if r < 0 { Err(io::Error::last_os_error()) } else { Ok(()) };
    }
    debug_assert!(total <= std::mem::size_of_val(&control));
    hdr.msg_control = control.as_mut_ptr().cast();
    hdr.msg_controllen = total as _;
    // SAFETY: `control` outlives the call, is zeroed, 8-byte aligned and holds `total` bytes,
    // the CMSG_SPACE of each control message written; CMSG_FIRSTHDR and CMSG_NXTHDR walk it
    // within msg_controllen (checked non-null), and each message's data lies within its
    // CMSG_LEN.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&hdr);
        if let Some(seg) = seg {
            if c.is_null() {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            (*c).cmsg_level = libc::SOL_UDP;
            (*c).cmsg_type = UDP_SEGMENT;
            (*c).cmsg_len = libc::CMSG_LEN(2) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), seg);
            c = libc::CMSG_NXTHDR(&hdr, c);
        }
        if let Some(ip) = src {
            if c.is_null() {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            (*c).cmsg_len = libc::CMSG_LEN(src_len as u32) as _;
            match ip {
                IpAddr::V4(v4) => {
                    (*c).cmsg_level = libc::IPPROTO_IP;
                    (*c).cmsg_type = libc::IP_PKTINFO;
                    let info = libc::in_pktinfo {
                        ipi_ifindex: 0,
                        ipi_spec_dst: libc::in_addr { s_addr: u32::from_ne_bytes(v4.octets()) },
                        ipi_addr: libc::in_addr { s_addr: 0 },
                    };
                    std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::in_pktinfo>(), info);
                }
                IpAddr::V6(v6) => {
                    (*c).cmsg_level = libc::IPPROTO_IPV6;
                    (*c).cmsg_type = libc::IPV6_PKTINFO;
                    let info = libc::in6_pktinfo { ipi6_addr: libc::in6_addr { s6_addr: v6.octets() }, ipi6_ifindex: 0 };
                    std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::in6_pktinfo>(), info);
                }
            }
        }
    }
    // SAFETY: `hdr` points at `addr`, `slices` and `control`, all alive for the call; the
    // kernel only reads them.
    let r = unsafe { libc::sendmsg(sock.as_raw_fd(), &hdr, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_datagram_crosses_loopback_with_its_ecn_codepoint() {
        let mut a = Socket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut b = Socket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let to = b.local_addr().unwrap();
        assert!(a.send(to, None, b"hello", 8).unwrap());
        assert!(b.wait(Duration::from_secs(2), false, None).unwrap());
        let got = b.recv().unwrap().to_vec();
        assert_eq!(got.len(), 1);
        // An empty datagram is received as one, of no bytes.
        assert!(a.send(to, None, b"", 0).unwrap());
        assert!(b.wait(Duration::from_secs(2), false, None).unwrap());
        let empty = b.recv().unwrap().to_vec();
        assert_eq!(empty.len(), 1);
        assert_eq!(b.datagram(&empty[0]), b"");
        assert_eq!(b.datagram(&got[0]), b"hello");
        assert_eq!(got[0].peer, a.local_addr().unwrap());
        if a.capabilities().has_tos {
            assert_eq!(got[0].ecn, Some(ECT0), "sent ECT(0) through the TOS byte");
        }
        // Nothing more: an empty batch, not an error, and an empty receive queue.
        assert_eq!(b.backlog_bytes(), Some(0));
        assert!(b.recv().unwrap().is_empty());
        assert!(!b.wait(Duration::from_millis(1), false, None).unwrap());
    }

    #[test]
    fn a_waker_ends_a_wait_at_once() {
        let s = Socket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let w = std::sync::Arc::new(Waker::new().unwrap());
        let w2 = std::sync::Arc::clone(&w);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            w2.wake();
        });
        let t0 = std::time::Instant::now();
        assert!(!s.wait(Duration::from_secs(10), false, Some(&w)).unwrap(), "woken, the socket not ready");
        assert!(t0.elapsed() < Duration::from_secs(5), "the wake ended the wait");
        t.join().unwrap();
        // The wake was consumed: the next wait runs to its timeout.
        let t0 = std::time::Instant::now();
        assert!(!s.wait(Duration::from_millis(20), false, Some(&w)).unwrap());
        assert!(t0.elapsed() >= Duration::from_millis(15));
    }

    #[test]
    fn the_backlog_counts_what_waits_in_the_receive_queue() {
        let mut a = Socket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut b = Socket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let to = b.local_addr().unwrap();
        for _ in 0..10 {
            assert!(a.send(to, None, &[1u8; 1000], 0).unwrap());
        }
        assert!(b.wait(Duration::from_secs(2), false, None).unwrap());
        let waiting = b.backlog_bytes().expect("Linux reports SO_MEMINFO");
        assert!(waiting >= 10_000, "ten 1000-byte datagrams wait: {waiting}");
        while !b.recv().unwrap().is_empty() {}
        assert_eq!(b.backlog_bytes(), Some(0));
    }

    #[test]
    fn a_wildcard_socket_replies_from_the_address_it_was_reached_at() {
        // b on 0.0.0.0 is reached at 127.0.0.2; the kernel's own choice of source for a reply
        // to 127.0.0.1 is 127.0.0.1, which the peer would not know. Every send path replies
        // from 127.0.0.2: one datagram, a GSO run, a gathered run.
        let mut a = Socket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut b = Socket::bind("0.0.0.0:0".parse().unwrap()).unwrap();
        let port = b.local_addr().unwrap().port();
        let there: SocketAddr = format!("127.0.0.2:{port}").parse().unwrap();
        assert!(a.send(there, None, b"hello", 0).unwrap());
        assert!(b.wait(Duration::from_secs(2), false, None).unwrap());
        let got = b.recv().unwrap().to_vec();
        assert_eq!(got.len(), 1);
        let here: IpAddr = "127.0.0.2".parse().unwrap();
        assert_eq!(got[0].dst, Some(here));
        let peer = got[0].peer;
        let run = [7u8; 300];
        assert!(b.send(peer, got[0].dst, b"one", 0).unwrap());
        assert!(b.send_run(peer, got[0].dst, &run, 100, 0).unwrap());
        assert!(b.send_run_gather(peer, got[0].dst, &[IoSlice::new(&run[..150]), IoSlice::new(&run[150..])], 300, 100, 0).unwrap());
        let mut seen = Vec::new();
        while seen.len() < 7 && a.wait(Duration::from_secs(2), false, None).unwrap() {
            for r in a.recv().unwrap().to_vec() {
                seen.push((r.peer, a.datagram(&r).len(), r.dst));
            }
        }
        let lens: Vec<usize> = seen.iter().map(|s| s.1).collect();
        assert_eq!(lens, [3, 100, 100, 100, 100, 100, 100]);
        assert!(seen.iter().all(|s| s.0 == there), "{seen:?}");
        // A socket bound to one address reports no destination (it has only the one).
        assert!(seen.iter().all(|s| s.2.is_none()));
    }
}
