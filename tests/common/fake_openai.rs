//! A misbehaving OpenAI-compatible server on loopback: each request gets the
//! next scripted behaviour (the last one repeats), one connection each.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Debug)]
pub enum Behaviour {
    /// 200 with this many chat choices, each `text`.
    Answer { choices: usize, text: &'static str },
    /// This HTTP status with a short body.
    Status(u16),
    /// 200 whose body is not JSON.
    Garbage,
    /// Reads the request and never answers.
    Hang,
    /// Promises a long body, sends a few bytes and closes.
    CutShort,
}

pub struct FakeServer {
    pub url: String,
    requests: Arc<AtomicUsize>,
}

impl FakeServer {
    pub fn start(script: Vec<Behaviour>) -> Self {
        assert!(!script.is_empty());
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let n = seen.fetch_add(1, Ordering::SeqCst);
                let behaviour = script[n.min(script.len() - 1)].clone();
                std::thread::spawn(move || serve(stream, behaviour));
            }
        });
        FakeServer { url, requests }
    }

    /// Requests received so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

fn serve(mut stream: TcpStream, behaviour: Behaviour) {
    if read_request(&stream).is_none() {
        return;
    }
    let reply = |status: u16, body: &str| {
        format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let text = match behaviour {
        Behaviour::Answer { choices, text } => {
            let choice = serde_json::json!({
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            });
            let body = serde_json::json!({
                "choices": vec![choice; choices],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5 * choices},
            });
            reply(200, &body.to_string())
        }
        Behaviour::Status(code) => reply(code, "{\"error\": \"scripted failure\"}"),
        Behaviour::Garbage => reply(200, "<html>not an API</html>"),
        Behaviour::Hang => {
            std::thread::sleep(Duration::from_secs(60));
            return;
        }
        Behaviour::CutShort => {
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{\"choices\": [".to_string()
        }
    };
    let _ = stream.write_all(text.as_bytes());
    let _ = stream.flush();
}

/// Reads one request's head and body; None when the client went away.
fn read_request(stream: &TcpStream) -> Option<()> {
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()
}
