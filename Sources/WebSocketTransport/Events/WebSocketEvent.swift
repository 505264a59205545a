/// What happens on a connection, in order per connection: `opened`, any number of `message`, then `closed`.
/// (A client connection that never opened gets only `closed`, with 1006 and the connect error as reason.)
public enum WebSocketEvent: Sendable, Hashable {
    case opened(WebSocketConnectionInfo)
    case message(WebSocketConnectionID, WebSocketInboundMessage)
    case closed(WebSocketConnectionID, WebSocketCloseFrame)
}

/// Receives every event of a server or client, called synchronously on its libwebsockets service thread.
///
/// Why a handler rather than an `AsyncStream`: measured with `websocket-bench --delivery stream` against the
/// default handler (1 publisher, 1,000 subscribers, 100-byte messages), handing each inbound message through an
/// `AsyncStream` to a consuming task costs a continuation resume and a thread hop per message, and the server is
/// slower by the figure recorded in the benchmark notes of README. The handler costs one indirect call; the
/// caller decides where work goes (e.g. `actor.enqueue` via its own queue, or yielding into its own stream).
///
/// The handler must return quickly and must not block: every connection of the server waits while it runs.
/// Calling `send`, `broadcast` or `close` from inside it is allowed.
public typealias WebSocketEventHandler = @Sendable (WebSocketEvent) -> Void
