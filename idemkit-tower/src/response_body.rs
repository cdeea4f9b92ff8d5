//! The response body: counted as it streams from the handler, kept whole when it fits
//! under the cache cap, and handed to the client in every case.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use pin_project_lite::pin_project;

pin_project! {
    /// The response body the layer returns: the handler's own body, passed through or
    /// resumed after the layer read part of it, or bytes the layer holds whole (a
    /// response it read, a replay, a refusal).
    pub struct ResponseBody<B: Body> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProjection]
    enum Kind<B: Body> {
        Whole { bytes: Option<Bytes>, trailers: Option<HeaderMap> },
        Inner { #[pin] body: B },
        Resumed { read: VecDeque<Bytes>, rest: Pin<Box<B>> },
        Broken { read: VecDeque<Bytes>, error: Option<<B as Body>::Error> },
    }
}

impl<B: Body> fmt::Debug for ResponseBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            Kind::Whole { .. } => "Whole",
            Kind::Inner { .. } => "Inner",
            Kind::Resumed { .. } => "Resumed",
            Kind::Broken { .. } => "Broken",
        };
        f.debug_struct("ResponseBody").field("kind", &kind).finish()
    }
}

impl<B: Body> ResponseBody<B> {
    /// Bytes held whole.
    pub(crate) fn whole(bytes: Bytes) -> ResponseBody<B> {
        ResponseBody::whole_with_trailers(bytes, None)
    }

    /// Bytes held whole, then the trailers the handler sent after them.
    pub(crate) fn whole_with_trailers(
        bytes: Bytes,
        trailers: Option<HeaderMap>,
    ) -> ResponseBody<B> {
        ResponseBody {
            kind: Kind::Whole {
                bytes: (!bytes.is_empty()).then_some(bytes),
                trailers,
            },
        }
    }

    /// The body of a stored response, for a replay: read where the store keeps it.
    ///
    /// The bytes own the stored response itself (the `Arc` the replay holds anyway, let
    /// go once the body is sent), so the body is never copied, not even a short one
    /// kept inside the response, and no count of its own is written on each replay.
    pub(crate) fn stored(response: Arc<idemkit_core::Response>) -> ResponseBody<B> {
        let bytes = if response.body.is_empty() {
            Bytes::new()
        } else {
            Bytes::from_owner(StoredBody(response))
        };
        ResponseBody::whole(bytes)
    }

    /// The handler's body, untouched.
    pub(crate) fn inner(body: B) -> ResponseBody<B> {
        ResponseBody {
            kind: Kind::Inner { body },
        }
    }

    fn resumed(read: Vec<Bytes>, rest: Pin<Box<B>>) -> ResponseBody<B> {
        ResponseBody {
            kind: Kind::Resumed {
                read: read.into(),
                rest,
            },
        }
    }

    fn broken(read: Vec<Bytes>, error: B::Error) -> ResponseBody<B> {
        ResponseBody {
            kind: Kind::Broken {
                read: read.into(),
                error: Some(error),
            },
        }
    }
}

impl<B> Body for ResponseBody<B>
where
    B: Body<Data = Bytes>,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        match self.project().kind.project() {
            KindProjection::Whole { bytes, trailers } => Poll::Ready(match bytes.take() {
                Some(bytes) => Some(Ok(Frame::data(bytes))),
                None => trailers
                    .take()
                    .map(|trailers| Ok(Frame::trailers(trailers))),
            }),
            KindProjection::Inner { body } => body.poll_frame(cx),
            KindProjection::Resumed { read, rest } => match read.pop_front() {
                Some(bytes) => Poll::Ready(Some(Ok(Frame::data(bytes)))),
                None => rest.as_mut().poll_frame(cx),
            },
            KindProjection::Broken { read, error } => Poll::Ready(match read.pop_front() {
                Some(bytes) => Some(Ok(Frame::data(bytes))),
                None => error.take().map(Err),
            }),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Whole { bytes, trailers } => bytes.is_none() && trailers.is_none(),
            Kind::Inner { body } => body.is_end_stream(),
            Kind::Resumed { read, rest } => read.is_empty() && rest.is_end_stream(),
            Kind::Broken { read, error } => read.is_empty() && error.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Whole { bytes, .. } => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |bytes| bytes.len() as u64))
            }
            Kind::Inner { body } => body.size_hint(),
            Kind::Resumed { read, rest } => {
                let read: u64 = read.iter().map(|bytes| bytes.len() as u64).sum();
                let rest = rest.size_hint();
                let mut hint = SizeHint::new();
                hint.set_lower(rest.lower().saturating_add(read));
                if let Some(upper) = rest.upper() {
                    hint.set_upper(upper.saturating_add(read));
                }
                hint
            }
            Kind::Broken { .. } => SizeHint::default(),
        }
    }
}

/// A stored response, seen as its body's bytes.
struct StoredBody(Arc<idemkit_core::Response>);

impl AsRef<[u8]> for StoredBody {
    fn as_ref(&self) -> &[u8] {
        self.0.body.as_bytes()
    }
}

/// What reading a response body up to the cache cap gave.
#[derive(Debug)]
pub(crate) enum Captured<B: Body> {
    /// The whole body fit: its bytes, and the trailers that followed them.
    Whole {
        bytes: Bytes,
        trailers: Option<HeaderMap>,
    },
    /// The body is longer than the cap: it cannot be stored, and `body` delivers it
    /// whole, the bytes already read first.
    TooLarge { body: ResponseBody<B> },
    /// The body broke off: `body` delivers what was read, then the error.
    Broken { body: ResponseBody<B> },
}

/// Reads `body` while it fits in `cap` bytes, counting the bytes as they stream (a
/// `Content-Length` header is not consulted: it may be absent, or wrong).
pub(crate) async fn capture<B>(body: B, cap: usize) -> Captured<B>
where
    B: Body<Data = Bytes>,
{
    let mut body = Box::pin(body);
    let mut read: Vec<Bytes> = Vec::new();
    let mut length = 0usize;
    let mut trailers: Option<HeaderMap> = None;
    while let Some(frame) = body.frame().await {
        let frame = match frame {
            Ok(frame) => frame,
            Err(error) => {
                return Captured::Broken {
                    body: ResponseBody::broken(read, error),
                };
            }
        };
        let data = match frame.into_data() {
            Ok(data) => data,
            Err(frame) => {
                if let Ok(more) = frame.into_trailers() {
                    trailers.get_or_insert_with(HeaderMap::new).extend(more);
                }
                continue;
            }
        };
        length = length.saturating_add(data.len());
        if !data.is_empty() {
            read.push(data);
        }
        if length > cap {
            return Captured::TooLarge {
                body: ResponseBody::resumed(read, body),
            };
        }
    }
    let bytes = match read.len() {
        0 => Bytes::new(),
        1 => read.pop().unwrap_or_default(),
        _ => {
            let mut joined = BytesMut::with_capacity(length);
            for chunk in &read {
                joined.extend_from_slice(chunk);
            }
            joined.freeze()
        }
    };
    Captured::Whole { bytes, trailers }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_body::tests::Chunks;

    fn block_on<F: Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    /// Every data frame of `body` joined, and whether it ended in an error.
    fn drain<B: Body<Data = Bytes>>(body: B) -> (Vec<u8>, bool) {
        block_on(async {
            let mut body = std::pin::pin!(body);
            let mut bytes = Vec::new();
            while let Some(frame) = body.frame().await {
                match frame {
                    Ok(frame) => {
                        if let Ok(data) = frame.into_data() {
                            bytes.extend_from_slice(&data);
                        }
                    }
                    Err(_) => return (bytes, true),
                }
            }
            (bytes, false)
        })
    }

    #[test]
    fn a_stored_body_is_read_where_the_store_keeps_it() {
        // A short body, kept inside the response, and a long one, shared.
        for body in [&b"charged 10 EUR"[..], &[b'x'; 4096]] {
            let stored = Arc::new(idemkit_core::Response::new(201, body.to_vec()));
            let mut replay = Box::pin(ResponseBody::<Chunks>::stored(Arc::clone(&stored)));
            assert_eq!(replay.size_hint().exact(), Some(body.len() as u64));
            let frame = block_on(replay.frame()).unwrap().unwrap();
            let bytes = frame.into_data().unwrap();
            assert_eq!(bytes, body);
            assert_eq!(
                bytes.as_ptr(),
                stored.body.as_bytes().as_ptr(),
                "not copied"
            );
            assert!(block_on(replay.frame()).is_none());
            // The bytes hold the stored response until they are sent, and no longer.
            drop(replay);
            assert_eq!(Arc::strong_count(&stored), 2);
            drop(bytes);
            assert_eq!(Arc::strong_count(&stored), 1);
        }
    }

    #[test]
    fn an_empty_stored_body_ends_at_once_and_holds_nothing() {
        let stored = Arc::new(idemkit_core::Response::new(204, Vec::new()));
        let replay = ResponseBody::<Chunks>::stored(Arc::clone(&stored));
        assert!(replay.is_end_stream());
        assert_eq!(replay.size_hint().exact(), Some(0));
        assert_eq!(Arc::strong_count(&stored), 1);
        assert_eq!(drain(replay), (Vec::new(), false));
    }

    #[test]
    fn a_body_under_the_cap_is_kept_whole() {
        let Captured::Whole { bytes, trailers } =
            block_on(capture(Chunks::new(&[b"ab", b"cd"]), 4))
        else {
            panic!("expected the whole body");
        };
        assert_eq!(bytes, "abcd");
        assert!(trailers.is_none());
        let whole = ResponseBody::<Chunks>::whole(bytes);
        assert_eq!(whole.size_hint().exact(), Some(4));
        assert_eq!(drain(whole), (b"abcd".to_vec(), false));
    }

    #[test]
    fn trailers_are_kept_for_the_first_client() {
        let Captured::Whole { bytes, trailers } =
            block_on(capture(Chunks::new(&[b"ab"]).then_trailers(), 4))
        else {
            panic!("expected the whole body");
        };
        let trailers = trailers.unwrap();
        assert_eq!(trailers["x-checksum"], "abc");
        let body = ResponseBody::<Chunks>::whole_with_trailers(bytes, Some(trailers));
        let collected = block_on(body.collect()).unwrap();
        assert_eq!(collected.trailers().unwrap()["x-checksum"], "abc");
        assert_eq!(collected.to_bytes(), "ab");
    }

    #[test]
    fn a_body_over_the_cap_is_delivered_whole_without_being_kept() {
        let chunks: Vec<Vec<u8>> = (0..8).map(|i| vec![b'a' + i; 256]).collect();
        let slices: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        let Captured::TooLarge { body } = block_on(capture(Chunks::new(&slices), 1024)) else {
            panic!("expected the body to exceed the cap");
        };
        let (delivered, failed) = drain(body);
        assert!(!failed);
        assert_eq!(delivered, chunks.concat());
    }

    #[test]
    fn the_cap_counts_bytes_not_a_declared_length() {
        // A body that declares 3 bytes but streams 5 is measured by what it streams.
        struct Liar(Chunks);
        impl Body for Liar {
            type Data = Bytes;
            type Error = crate::request_body::BoxError;
            fn poll_frame(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
            ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
                Pin::new(&mut self.get_mut().0).poll_frame(cx)
            }
            fn size_hint(&self) -> SizeHint {
                SizeHint::with_exact(3)
            }
        }
        let liar = Liar(Chunks::new(&[b"abc", b"de"]));
        assert!(matches!(
            block_on(capture(liar, 4)),
            Captured::TooLarge { .. }
        ));
        let exact = block_on(capture(Chunks::new(&[b"abcd"]), 4));
        assert!(matches!(exact, Captured::Whole { .. }));
    }

    #[test]
    fn a_broken_body_delivers_what_was_read_then_the_error() {
        let Captured::Broken { body } =
            block_on(capture(Chunks::new(&[b"par", b"tial"]).then_fail(), 1024))
        else {
            panic!("expected a broken body");
        };
        assert_eq!(drain(body), (b"partial".to_vec(), true));
    }

    #[test]
    fn an_untouched_body_passes_through() {
        let body = ResponseBody::inner(Chunks::new(&[b"x", b"y"]));
        assert_eq!(drain(body), (b"xy".to_vec(), false));
        let empty = ResponseBody::<Chunks>::whole(Bytes::new());
        assert!(empty.is_end_stream());
    }
}
