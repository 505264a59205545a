/// What happens on a connection, in order per connection: `opened`, any number of `message`, then `closed`.
/// (A client connection that never opened gets only `closed`, with 1006 and the connect error as reason.)
public enum WebSocketEvent: Sendable, Hashable {
    case opened(WebSocketConnectionInfo)
    case message(WebSocketConnectionID, WebSocketInboundMessage)
    case closed(WebSocketConnectionID, WebSocketCloseFrame)
}

/// Receives every event of a server or client, called synchronously on its libwebsockets service thread.
///
/// Why a handler rather than one `AsyncStream` of events: measured with `websocket-bench inbound` (100
/// connections sending 100-byte messages to one server, release build, this shared 2-core machine), the handler
/// delivered 1.3–2 times the messages/s of an `AsyncStream` drained by one task (e.g. 450,000 against 264,000
/// and 668,000 against 328,000 in one run; 236,000 against 186,000 under heavier load): the stream
/// adds a continuation resume and a hop to another thread per message. In the fan-out benchmark, where inbound
/// traffic is light, the two were within a few percent. The handler costs one indirect call and leaves the
/// choice to the caller (hand the message to the table's actor, or yield it into its own stream).
///
/// The handler must return quickly and must not block: every connection of the server waits while it runs.
/// Calling `send`, `broadcast` or `close` from inside it is allowed.
public typealias WebSocketEventHandler = @Sendable (WebSocketEvent) -> Void
