//! The request body: read whole (up to a cap) before a protected request runs, because
//! its bytes are part of the fingerprint, then handed to the inner service.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use pin_project_lite::pin_project;

/// The boxed error of a body that failed.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

pin_project! {
    /// The request body the inner service receives: the original body for a request
    /// the layer lets through, or the bytes the layer read for a protected request.
    ///
    /// With axum nothing needs to name it. A hyper service behind the layer accepts
    /// `Request<RequestBody<Incoming>>` (or is generic over its body type).
    #[project = RequestBodyProjection]
    #[derive(Debug)]
    pub struct RequestBody<B> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProjection]
    #[derive(Debug)]
    enum Kind<B> {
        Untouched { #[pin] body: B },
        Read { bytes: Option<Bytes> },
    }
}

impl<B> RequestBody<B> {
    /// The original body, passed on as it is.
    pub(crate) fn untouched(body: B) -> RequestBody<B> {
        RequestBody {
            kind: Kind::Untouched { body },
        }
    }

    /// A body the layer has read whole.
    pub(crate) fn read(bytes: Bytes) -> RequestBody<B> {
        RequestBody {
            kind: Kind::Read {
                bytes: (!bytes.is_empty()).then_some(bytes),
            },
        }
    }
}

impl<B> Body for RequestBody<B>
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
            KindProjection::Untouched { body } => body.poll_frame(cx),
            KindProjection::Read { bytes } => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Untouched { body } => body.is_end_stream(),
            Kind::Read { bytes } => bytes.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Untouched { body } => body.size_hint(),
            Kind::Read { bytes } => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
        }
    }
}

/// What reading a request body up to a cap gave.
#[derive(Debug)]
pub(crate) enum ReadBody {
    /// The whole body, at most the cap.
    Complete(Bytes),
    /// The body is longer than the cap (by its `Content-Length`, or by the bytes read).
    TooLarge,
    /// The body broke off (the client went away, or sent a malformed body).
    Failed(BoxError),
}

/// Reads `body` whole if it is at most `cap` bytes long, counting the bytes as they
/// arrive. A declared length over the cap is refused before reading (the count would
/// exceed it anyway); a declared length under the cap is not trusted.
pub(crate) async fn read_capped<B>(body: B, cap: usize) -> ReadBody
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    if body.size_hint().lower() > cap as u64 {
        return ReadBody::TooLarge;
    }
    let mut body = std::pin::pin!(body);
    let mut first: Option<Bytes> = None;
    let mut joined: Option<BytesMut> = None;
    let mut length = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = match frame {
            Ok(frame) => frame,
            Err(error) => return ReadBody::Failed(error.into()),
        };
        let Ok(data) = frame.into_data() else {
            // Trailers carry nothing the fingerprint covers.
            continue;
        };
        length = length.saturating_add(data.len());
        if length > cap {
            return ReadBody::TooLarge;
        }
        // One chunk, the common case, is kept without a copy.
        match (&mut first, &mut joined) {
            (None, None) => first = Some(data),
            (Some(_), None) => {
                let mut buffer = BytesMut::with_capacity(length);
                buffer.extend_from_slice(&first.take().unwrap_or_default());
                buffer.extend_from_slice(&data);
                joined = Some(buffer);
            }
            (_, Some(buffer)) => buffer.extend_from_slice(&data),
        }
    }
    ReadBody::Complete(match joined {
        Some(buffer) => buffer.freeze(),
        None => first.unwrap_or_default(),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::convert::Infallible;

    /// A body sent as the given chunks, with no declared length, possibly ending in an
    /// error.
    pub(crate) struct Chunks {
        frames: VecDeque<Result<Frame<Bytes>, BoxError>>,
    }

    impl Chunks {
        pub(crate) fn new(chunks: &[&[u8]]) -> Chunks {
            Chunks {
                frames: chunks
                    .iter()
                    .map(|chunk| Ok(Frame::data(Bytes::copy_from_slice(chunk))))
                    .collect(),
            }
        }

        pub(crate) fn then_fail(mut self) -> Chunks {
            self.frames.push_back(Err("connection reset".into()));
            self
        }

        pub(crate) fn then_trailers(mut self) -> Chunks {
            let mut trailers = http::HeaderMap::new();
            trailers.insert("x-checksum", http::HeaderValue::from_static("abc"));
            self.frames.push_back(Ok(Frame::trailers(trailers)));
            self
        }
    }

    impl Body for Chunks {
        type Data = Bytes;
        type Error = BoxError;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
            Poll::Ready(self.frames.pop_front())
        }
    }

    fn block_on<F: Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    fn read(body: impl Body<Data = Bytes, Error = impl Into<BoxError>>, cap: usize) -> ReadBody {
        block_on(read_capped(body, cap))
    }

    #[test]
    fn a_body_within_the_cap_is_read_whole() {
        let ReadBody::Complete(bytes) = read(Chunks::new(&[b"ab", b"", b"cd", b"e"]), 5) else {
            panic!("expected the whole body");
        };
        assert_eq!(bytes, "abcde");
        let ReadBody::Complete(bytes) = read(Chunks::new(&[b"one chunk"]), 100) else {
            panic!("expected the whole body");
        };
        assert_eq!(bytes, "one chunk");
        let ReadBody::Complete(bytes) = read(Chunks::new(&[]), 0) else {
            panic!("expected an empty body");
        };
        assert!(bytes.is_empty());
    }

    #[test]
    fn trailers_are_skipped() {
        let ReadBody::Complete(bytes) = read(Chunks::new(&[b"ab"]).then_trailers(), 5) else {
            panic!("expected the whole body");
        };
        assert_eq!(bytes, "ab");
    }

    #[test]
    fn a_body_over_the_cap_is_refused_by_its_bytes_whatever_it_declares() {
        assert!(matches!(
            read(Chunks::new(&[b"abc", b"def"]), 5),
            ReadBody::TooLarge
        ));
        // A declared length over the cap is refused without reading.
        let declared = http_body_util::Full::new(Bytes::from_static(b"123456"));
        assert!(matches!(read(declared, 5), ReadBody::TooLarge));
    }

    #[test]
    fn a_broken_body_is_a_failure() {
        assert!(matches!(
            read(Chunks::new(&[b"ab"]).then_fail(), 5),
            ReadBody::Failed(_)
        ));
    }

    #[test]
    fn the_inner_service_gets_the_bytes_read_or_the_untouched_body() {
        let read_body: RequestBody<http_body_util::Full<Bytes>> =
            RequestBody::read(Bytes::from_static(b"payload"));
        assert_eq!(read_body.size_hint().exact(), Some(7));
        let collected = block_on(read_body.collect()).unwrap().to_bytes();
        assert_eq!(collected, "payload");

        let empty: RequestBody<http_body_util::Empty<Bytes>> = RequestBody::read(Bytes::new());
        assert!(empty.is_end_stream());

        let untouched = RequestBody::untouched(http_body_util::Full::new(Bytes::from_static(b"x")));
        let collected = block_on(untouched.collect())
            .map_err(|never: Infallible| never)
            .unwrap()
            .to_bytes();
        assert_eq!(collected, "x");
    }
}
