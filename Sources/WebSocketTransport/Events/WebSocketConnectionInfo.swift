/// What is known about a connection when it opens: for the server, from the peer's upgrade request; for the
/// client, from the request it made.
public struct WebSocketConnectionInfo: Sendable, Hashable {
    /// The connection this describes.
    public let id: WebSocketConnectionID
    /// The peer's IP address as text (no reverse DNS).
    public let remoteAddress: String
    /// The request path without the query, e.g. `/tables/42`.
    public let path: String
    /// The query string without `?` (arguments joined by `&`, URL-decoded by libwebsockets), or `nil`.
    public let query: String?
    /// The `Origin` header, or `nil`.
    public let origin: String?
    /// The `Host` header (the address the peer used, e.g. `192.168.1.20:8080`), or `nil`.
    public let host: String?
    /// The negotiated `Sec-WebSocket-Protocol`, or `nil` when the client asked for none.
    public let subprotocol: String?

    /// Memberwise; the transport creates these, tests and adapters may too.
    public init(
        id: WebSocketConnectionID, remoteAddress: String, path: String, query: String?, origin: String?,
        subprotocol: String?, host: String? = nil
    ) {
        self.id = id
        self.remoteAddress = remoteAddress
        self.path = path
        self.query = query
        self.origin = origin
        self.subprotocol = subprotocol
        self.host = host
    }
}
