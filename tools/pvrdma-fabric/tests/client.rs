// SPDX-License-Identifier: GPL-2.0-only
//! FabricClient against a scripted fake mux.

use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use pvrdma_fabric::wire::{self, AckStatus, Frame, CAP_GID_TYPE, FLAG_IGNORABLE};
use pvrdma_fabric::{FabricClient, Gid, GidSink, GidType, FABRIC_SOCKET_ENV};

#[derive(Default)]
struct Table {
    gids: Mutex<Vec<Gid>>,
}

impl GidSink for Table {
    fn gid_added(&self, gid: Gid) -> Result<(), String> {
        let mut gids = self.gids.lock().unwrap();
        if gids.len() >= 2 {
            return Err("table full".into());
        }
        gids.push(gid);
        Ok(())
    }

    fn gid_removed(&self, gid: Gid) {
        self.gids.lock().unwrap().retain(|g| *g != gid);
    }
}

/// A sink with types: records what it was given.
#[derive(Default)]
struct Typed {
    added: Mutex<Vec<(Gid, GidType)>>,
}

impl GidSink for Typed {
    fn gid_added(&self, _: Gid) -> Result<(), String> {
        panic!("the client calls gid_added_typed")
    }

    fn gid_added_typed(&self, gid: Gid, ty: GidType) -> Result<(), String> {
        self.added.lock().unwrap().push((gid, ty));
        Ok(())
    }

    fn gid_removed(&self, _: Gid) {}
}

struct Panicky;

impl GidSink for Panicky {
    fn gid_added(&self, _: Gid) -> Result<(), String> {
        panic!("boom")
    }
    fn gid_removed(&self, _: Gid) {}
}

/// A temporary directory, removed on drop.
struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn socket_path(tag: &str) -> (PathBuf, UnixListener, Dir) {
    let dir = std::env::temp_dir().join(format!("pvrdma-fabric-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fabric.sock");
    let listener = UnixListener::bind(&path).unwrap();
    (path, listener, Dir(dir))
}

/// Accepts one client, checks its HELLO, answers with `reply`.
fn greet(listener: &UnixListener, reply: Frame) -> UnixStream {
    let (mut s, _) = listener.accept().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    match wire::read_frame(&mut s).unwrap() {
        Some((
            0,
            Frame::Hello {
                version, pid, caps, ..
            },
        )) => {
            assert_eq!(version, wire::PROTOCOL_VERSION);
            assert_eq!(pid, std::process::id());
            assert_eq!(
                caps & CAP_GID_TYPE,
                CAP_GID_TYPE,
                "every client takes GID types"
            );
        }
        other => panic!("{other:?}"),
    }
    wire::write_frame(&mut s, 0, &reply).unwrap();
    s
}

fn welcome() -> Frame {
    Frame::Welcome {
        version: 1,
        caps: 0,
        name: "fake-mux".into(),
    }
}

#[test]
fn serves_gid_changes_and_acks_them() {
    let (path, listener, _dir) = socket_path("serve");
    let server = thread::spawn(move || {
        let mut s = greet(&listener, welcome());
        fn ask(s: &mut UnixStream, seq: u32, frame: Frame) -> (u32, Frame) {
            wire::write_frame(s, seq, &frame).unwrap();
            wire::read_frame(s).unwrap().unwrap()
        }
        let a = ask(&mut s, 1, Frame::GidAdd([1; 16], None));
        // A typed add reaches a sink without types as gid_added.
        let b = ask(&mut s, 2, Frame::GidAdd([2; 16], Some(GidType::RoceV2)));
        let c = ask(&mut s, 3, Frame::GidAdd([3; 16], None));
        // Ignorable unknown kinds are skipped without an answer.
        let unknown = Frame::Unknown {
            kind: 0x1ff,
            flags: FLAG_IGNORABLE,
            payload: vec![],
        };
        wire::write_frame(&mut s, 4, &unknown).unwrap();
        let d = ask(&mut s, 5, Frame::GidDel([1; 16]));
        (a, b, c, d, s)
    });
    let table = Arc::new(Table::default());
    let client = FabricClient::connect(&path, table.clone()).unwrap();
    assert_eq!(client.server_name(), "fake-mux");
    assert_eq!(client.version(), 1);
    let (a, b, c, d, s) = server.join().unwrap();
    assert_eq!(a, (1, Frame::Ack(AckStatus::Ok)));
    assert_eq!(b, (2, Frame::Ack(AckStatus::Ok)));
    assert_eq!(c, (3, Frame::Ack(AckStatus::Refused("table full".into()))));
    assert_eq!(d, (5, Frame::Ack(AckStatus::Ok)));
    assert_eq!(*table.gids.lock().unwrap(), vec![[2; 16]]);
    assert!(client.is_connected());
    drop(s);
    // The mux going away ends the session.
    for _ in 0..100 {
        if !client.is_connected() {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    assert!(!client.is_connected());
}

#[test]
fn gid_types_reach_the_sink() {
    let (path, listener, _dir) = socket_path("typed");
    let server = thread::spawn(move || {
        let welcome = Frame::Welcome {
            version: 1,
            caps: CAP_GID_TYPE,
            name: "fake-mux".into(),
        };
        let mut s = greet(&listener, welcome);
        let adds = [
            Frame::GidAdd([1; 16], Some(GidType::RoceV2)),
            Frame::GidAdd([2; 16], Some(GidType::RoceV1)),
            // Without the byte (a mux that did not grant it): RoCE v1.
            Frame::GidAdd([3; 16], None),
        ];
        for (seq, add) in (1..).zip(adds) {
            wire::write_frame(&mut s, seq, &add).unwrap();
            let ack = wire::read_frame(&mut s).unwrap().unwrap();
            assert_eq!(ack, (seq, Frame::Ack(AckStatus::Ok)));
        }
        s
    });
    let sink = Arc::new(Typed::default());
    let client = FabricClient::connect(&path, sink.clone()).unwrap();
    let _s = server.join().unwrap();
    assert_eq!(client.caps(), CAP_GID_TYPE);
    assert_eq!(
        *sink.added.lock().unwrap(),
        vec![
            ([1; 16], GidType::RoceV2),
            ([2; 16], GidType::RoceV1),
            ([3; 16], GidType::RoceV1)
        ]
    );
}

#[test]
fn dropping_the_client_disconnects() {
    let (path, listener, _dir) = socket_path("drop");
    let server = thread::spawn(move || {
        let mut s = greet(&listener, welcome());
        // Blocks until the client is dropped, then sees EOF.
        wire::read_frame(&mut s).unwrap()
    });
    let client = FabricClient::connect(&path, Arc::new(Table::default())).unwrap();
    thread::sleep(Duration::from_millis(50));
    drop(client);
    assert_eq!(server.join().unwrap(), None);
}

#[test]
fn refusals_and_bad_welcomes_fail_connect() {
    let (path, listener, _dir) = socket_path("refuse");
    let server = thread::spawn(move || {
        greet(&listener, Frame::Error("no thanks".into()));
        greet(
            &listener,
            Frame::Welcome {
                version: 99,
                caps: 0,
                name: String::new(),
            },
        );
        greet(&listener, Frame::GidAdd([0; 16], None));
    });
    let sink = Arc::new(Table::default());
    let e = FabricClient::connect(&path, sink.clone()).err().unwrap();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
    assert!(e.to_string().contains("no thanks"), "{e}");
    let e = FabricClient::connect(&path, sink.clone()).err().unwrap();
    assert!(e.to_string().contains("version 99"), "{e}");
    let e = FabricClient::connect(&path, sink).err().unwrap();
    assert!(e.to_string().contains("expected WELCOME"), "{e}");
    server.join().unwrap();
    let missing = path.with_file_name("nobody.sock");
    assert!(FabricClient::connect(&missing, Arc::new(Table::default())).is_err());
}

#[test]
fn a_panicking_sink_refuses_instead_of_dying() {
    let (path, listener, _dir) = socket_path("panic");
    let server = thread::spawn(move || {
        let mut s = greet(&listener, welcome());
        wire::write_frame(&mut s, 7, &Frame::GidAdd([7; 16], None)).unwrap();
        wire::read_frame(&mut s).unwrap().unwrap()
    });
    let _client = FabricClient::connect(&path, Arc::new(Panicky)).unwrap();
    assert_eq!(
        server.join().unwrap(),
        (
            7,
            Frame::Ack(AckStatus::Refused("gid_added panicked".into()))
        )
    );
}

#[test]
fn connect_from_env_needs_the_variable() {
    // Only this test touches the variable.
    std::env::remove_var(FABRIC_SOCKET_ENV);
    assert!(FabricClient::connect_from_env(Arc::new(Table::default())).is_none());
}
