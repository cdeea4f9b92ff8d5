//! Conversions between [`Response`] and `http::Response<Bytes>` (the `http` feature).

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, StatusCode};

use crate::response::Response;

/// Why a [`Response`] is not a valid `http::Response`: its status is outside 100-999, or a
/// header name or value is one HTTP does not allow.
#[derive(Debug, thiserror::Error)]
#[error("not a valid HTTP response: {0}")]
pub struct InvalidHttpResponse(#[source] http::Error);

impl From<http::Response<Bytes>> for Response {
    /// The response's status, headers (in order, repeated names kept, values as raw
    /// bytes) and body, without copying a body of more than 22 bytes (a smaller one is
    /// kept inline, see [`Body`](crate::Body)).
    fn from(response: http::Response<Bytes>) -> Response {
        let (parts, body) = response.into_parts();
        let headers = parts
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    Bytes::copy_from_slice(value.as_bytes()),
                )
            })
            .collect();
        Response {
            status: parts.status.as_u16(),
            headers,
            body: body.into(),
        }
    }
}

impl TryFrom<&Response> for http::Response<Bytes> {
    type Error = InvalidHttpResponse;

    /// The stored response as an `http::Response`, for a replay: a body kept as `Bytes`
    /// is shared, not copied; any other, at most 1 KiB, is copied out (see
    /// [`Body::to_bytes`](crate::Body::to_bytes)).
    ///
    /// ```
    /// use idemkit_core::{Bytes, Response};
    ///
    /// let stored = Response::new(201, "created").with_header("location", "/orders/7");
    /// let replay = http::Response::<Bytes>::try_from(&stored)?;
    /// assert_eq!(replay.status(), 201);
    /// assert_eq!(replay.headers()["location"], "/orders/7");
    /// assert_eq!(Response::from(replay), stored);
    /// # Ok::<(), idemkit_core::InvalidHttpResponse>(())
    /// ```
    fn try_from(response: &Response) -> Result<http::Response<Bytes>, InvalidHttpResponse> {
        let status = StatusCode::from_u16(response.status)
            .map_err(|error| InvalidHttpResponse(error.into()))?;
        let mut headers = HeaderMap::with_capacity(response.headers.len());
        for (name, value) in &response.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|error| InvalidHttpResponse(error.into()))?;
            let value = HeaderValue::from_maybe_shared(value.clone())
                .map_err(|error| InvalidHttpResponse(error.into()))?;
            headers.append(name, value);
        }
        let mut converted = http::Response::new(response.body.to_bytes());
        *converted.status_mut() = status;
        *converted.headers_mut() = headers;
        Ok(converted)
    }
}

impl TryFrom<Response> for http::Response<Bytes> {
    type Error = InvalidHttpResponse;

    /// See the conversion from `&Response`.
    fn try_from(response: Response) -> Result<http::Response<Bytes>, InvalidHttpResponse> {
        http::Response::try_from(&response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_headers_and_raw_values_survive_both_ways() {
        let response = Response::new(200, "ok")
            .with_header("set-thing", "a")
            .with_header("set-thing", "b")
            .with_header("x-raw", Bytes::from_static(b"\xfe\xff"));
        let converted = http::Response::<Bytes>::try_from(&response).unwrap();
        let values: Vec<_> = converted.headers().get_all("set-thing").iter().collect();
        assert_eq!(values, ["a", "b"]);
        assert_eq!(converted.headers()["x-raw"].as_bytes(), b"\xfe\xff");
        assert_eq!(Response::from(converted), response);
    }

    #[test]
    fn the_body_is_shared_not_copied() {
        let response = Response::new(200, Bytes::from(vec![7_u8; 1024]));
        let converted = http::Response::<Bytes>::try_from(&response).unwrap();
        assert_eq!(converted.body().as_ptr(), response.body.as_ptr());
    }

    #[test]
    fn invalid_statuses_and_headers_are_errors_not_panics() {
        for bad in [
            Response::new(42, ""),
            Response::new(1000, ""),
            Response::new(200, "").with_header("bad name", "x"),
            Response::new(200, "").with_header("x", "line\nbreak"),
        ] {
            assert!(http::Response::<Bytes>::try_from(&bad).is_err(), "{bad:?}");
        }
    }
}
