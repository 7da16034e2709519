// SPDX-License-Identifier: GPL-2.0-only
//! Unix socket facilities std does not offer: peer credentials, queue
//! lengths, polling with a sub-millisecond timeout, and socket path hygiene.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// The PID of the process at the other end of a connected unix socket
/// (SO_PEERCRED: the process that called `connect`).
pub fn peer_pid(sock: &impl AsRawFd) -> io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes and `len` holds the size of
    // `cred`, as getsockopt(SO_PEERCRED) requires; an invalid fd only yields an
    // error.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    u32::try_from(cred.pid).map_err(|_| io::Error::other("peer has no PID"))
}

/// Bytes we sent that the peer has not read yet (SIOCOUTQ). For unix stream
/// sockets this is the memory charged for unread buffers, so only "zero" versus
/// "not zero" is meaningful.
pub fn outq_len(sock: &impl AsRawFd) -> io::Result<usize> {
    int_ioctl(sock.as_raw_fd(), libc::TIOCOUTQ)
}

/// Bytes the peer sent that we have not read yet (SIOCINQ).
pub fn inq_len(sock: &impl AsRawFd) -> io::Result<usize> {
    int_ioctl(sock.as_raw_fd(), libc::FIONREAD)
}

fn int_ioctl(fd: RawFd, request: libc::Ioctl) -> io::Result<usize> {
    let mut value: libc::c_int = 0;
    // SAFETY: both requests write one c_int through the pointer, which points
    // to a live local; an invalid fd only yields an error.
    let rc = unsafe { libc::ioctl(fd, request, &mut value as *mut libc::c_int) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    usize::try_from(value).map_err(|_| io::Error::other("negative queue length"))
}

/// Waits until one of `fds` is readable (or hung up / in error), or until
/// `timeout` passes (`None`: forever). Returns which fds are ready.
pub fn poll_readable<const N: usize>(
    fds: [RawFd; N],
    timeout: Option<Duration>,
) -> io::Result<[bool; N]> {
    let mut pfds = fds.map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(t.subsec_nanos() as i32),
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `pfds` is a live array of N pollfds, `ts_ptr` is null or points to
    // a live timespec, and a null sigmask leaves the signal mask unchanged.
    let rc = unsafe {
        libc::ppoll(
            pfds.as_mut_ptr(),
            N as libc::nfds_t,
            ts_ptr,
            std::ptr::null(),
        )
    };
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::Interrupted {
            return Ok([false; N]);
        }
        return Err(err);
    }
    Ok(pfds.map(|p| p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0))
}

/// An epoll set whose events carry a caller-chosen token.
///
/// Besides ordinary level-triggered readability it can watch a socket for
/// "the peer consumed data we sent": a unix socket's `sock_wfree` calls
/// `unix_write_space` each time the reader frees one of our buffers, which
/// wakes the socket's waiters with EPOLLOUT. Registered edge-triggered
/// (EPOLLOUT | EPOLLET) on a duplicate of the socket's fd, that wake-up
/// becomes one event per consumed write.
pub struct Poller {
    epfd: OwnedFd,
}

impl Poller {
    /// An empty set.
    pub fn new() -> io::Result<Poller> {
        // SAFETY: epoll_create1 has no memory effects.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a freshly created descriptor that nothing else owns.
        Ok(Poller {
            epfd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Watches `fd` for readability (level-triggered), hang-up and errors.
    pub fn add_readable(&self, fd: RawFd, token: u64) -> io::Result<()> {
        self.add(fd, libc::EPOLLIN | libc::EPOLLRDHUP, token)
    }

    /// Watches `fd` for "the peer consumed some of our data" (edge-triggered
    /// EPOLLOUT). `fd` must be a duplicate not otherwise registered here.
    pub fn add_consumed(&self, fd: RawFd, token: u64) -> io::Result<()> {
        self.add(fd, libc::EPOLLOUT | libc::EPOLLET, token)
    }

    fn add(&self, fd: RawFd, events: i32, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: events as u32,
            u64: token,
        };
        // SAFETY: `ev` is a live epoll_event; the kernel copies it.
        let rc =
            unsafe { libc::epoll_ctl(self.epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits up to `timeout` (`None`: forever; rounded up to whole
    /// milliseconds) and returns the tokens of the ready entries.
    pub fn wait(&self, timeout: Option<Duration>) -> io::Result<Vec<u64>> {
        let ms = match timeout {
            None => -1,
            Some(t) => {
                let ms = t.as_micros().div_ceil(1000);
                i32::try_from(ms).unwrap_or(i32::MAX)
            }
        };
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 8];
        // SAFETY: `events` is a live array of 8 epoll_events, as passed.
        let n = unsafe {
            libc::epoll_wait(
                self.epfd.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as i32,
                ms,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                return Ok(Vec::new());
            }
            return Err(err);
        }
        Ok(events[..n as usize].iter().map(|e| e.u64).collect())
    }
}

/// Shuts a socket down by fd, e.g. to wake a thread blocked in `accept` on a
/// listener (Linux then fails the accept with EINVAL).
pub fn shutdown_fd(fd: RawFd) {
    // SAFETY: shutdown has no memory effects; on a closed or foreign fd it
    // fails harmlessly.
    unsafe {
        libc::shutdown(fd, libc::SHUT_RDWR);
    }
}

/// Makes `path` free for `bind`: removes a stale socket file left by a dead
/// process, but refuses to touch a socket someone still listens on or a file
/// that is not a socket.
pub fn prepare_socket_path(path: &Path) -> io::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !meta.file_type().is_socket() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} exists and is not a socket", path.display()),
        ));
    }
    if UnixStream::connect(path).is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("{} is in use by a live process", path.display()),
        ));
    }
    std::fs::remove_file(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn peer_pid_is_ours_for_a_pair() {
        let (a, _b) = UnixStream::pair().unwrap();
        assert_eq!(peer_pid(&a).unwrap(), std::process::id());
    }

    #[test]
    fn queue_lengths_follow_reads() {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        assert_eq!(outq_len(&a).unwrap(), 0);
        a.write_all(&[7; 360]).unwrap();
        assert!(outq_len(&a).unwrap() > 0);
        assert_eq!(inq_len(&b).unwrap(), 360);
        assert_eq!(
            poll_readable([b.as_raw_fd()], Some(Duration::ZERO)).unwrap(),
            [true]
        );
        let mut buf = [0; 360];
        b.read_exact(&mut buf).unwrap();
        assert_eq!(outq_len(&a).unwrap(), 0);
        assert_eq!(inq_len(&b).unwrap(), 0);
        let ready = poll_readable([b.as_raw_fd()], Some(Duration::from_micros(200))).unwrap();
        assert_eq!(ready, [false]);
    }

    #[test]
    fn poller_reports_each_consumed_write() {
        use std::os::fd::AsFd;
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let dup = a.as_fd().try_clone_to_owned().unwrap();
        let p = Poller::new().unwrap();
        p.add_readable(a.as_raw_fd(), 1).unwrap();
        p.add_consumed(dup.as_raw_fd(), 2).unwrap();
        // The registration itself reports once (the socket is writable).
        assert_eq!(p.wait(Some(Duration::ZERO)).unwrap(), vec![2]);
        assert!(p.wait(Some(Duration::ZERO)).unwrap().is_empty());
        a.write_all(&[1; 360]).unwrap();
        a.write_all(&[2; 360]).unwrap();
        assert!(
            p.wait(Some(Duration::from_millis(1))).unwrap().is_empty(),
            "nothing read yet"
        );
        let mut buf = [0; 360];
        b.read_exact(&mut buf).unwrap();
        assert_eq!(p.wait(Some(Duration::ZERO)).unwrap(), vec![2], "first read");
        assert!(p.wait(Some(Duration::ZERO)).unwrap().is_empty());
        b.read_exact(&mut buf).unwrap();
        assert_eq!(
            p.wait(Some(Duration::ZERO)).unwrap(),
            vec![2],
            "second read"
        );
        b.write_all(&[3; 360]).unwrap();
        assert_eq!(p.wait(Some(Duration::ZERO)).unwrap(), vec![1], "readable");
        assert_eq!(
            p.wait(Some(Duration::ZERO)).unwrap(),
            vec![1],
            "still readable (level)"
        );
    }
}
