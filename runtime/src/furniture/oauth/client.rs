//! rmcp's streamable-HTTP client with a furniture's OAuth bearer on every request: the current
//! token (fetched or refreshed when it has expired) goes with each one, and a `401` with a
//! challenge is answered once — discovery the first time, then a new token — and the request
//! sent again.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use axum::http::{HeaderName, HeaderValue};
use futures::stream::BoxStream;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::Authorizer;

/// `inner` with `auth`'s bearer.
#[derive(Clone)]
pub(crate) struct OAuthClient<C> {
    pub(crate) inner: C,
    pub(crate) auth: Arc<Authorizer>,
}

type Result<T, E> = std::result::Result<T, StreamableHttpError<E>>;

fn failed<E: std::error::Error + Send + Sync + 'static>(m: String) -> StreamableHttpError<E> {
    StreamableHttpError::Io(std::io::Error::other(m))
}

impl<C: StreamableHttpClient + Sync> OAuthClient<C> {
    /// Sends with the current token; on a challenge, once more with a new one.
    async fn with_token<T, F, Fut>(&self, send: F) -> Result<T, C::Error>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, C::Error>>,
    {
        let token = self.auth.token().await.map_err(failed)?;
        match send(token.clone()).await {
            Err(StreamableHttpError::AuthRequired(challenge)) => {
                let token = self
                    .auth
                    .unauthorized(&challenge.www_authenticate_header, token.as_deref())
                    .await
                    .map_err(failed)?;
                send(Some(token)).await
            }
            other => other,
        }
    }
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for OAuthClient<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, C::Error> {
        self.with_token(|token| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, C::Error> {
        self.with_token(|token| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, C::Error> {
        self.with_token(|token| {
            self.inner.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), C::Error> {
        self.with_token(|token| {
            self.inner.delete_session(
                uri.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, std::result::Result<Sse, SseError>>, C::Error> {
        self.with_token(|token| {
            self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, std::result::Result<Sse, SseError>>, C::Error> {
        self.with_token(|token| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
