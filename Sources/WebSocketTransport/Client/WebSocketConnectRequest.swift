/// Where and how a client connection connects (`ws://`, or `wss://` with `usesTLS`).
public struct WebSocketConnectRequest: Sendable, Hashable {
    /// Host name or IP address.
    public var host: String
    /// TCP port.
    public var port: Int
    /// Request path with optional query, e.g. `/tables/42?since=7`.
    public var path: String
    /// `Sec-WebSocket-Protocol` to ask for, or `nil`.
    public var subprotocol: String?
    /// `Origin` header, e.g. `http://example.test`; libwebsockets only sends `http://` origins. `nil` sends
    /// `http://host:port`.
    public var origin: String?
    /// Extra request headers, e.g. `["Authorization": "Bearer …"]`.
    public var headers: [String: String]
    /// TLS (`wss://`), verified as the client's ``ClientTLS`` says.
    public var usesTLS: Bool
    /// The local IP address the socket binds to before connecting (e.g. `127.0.0.2`, so that many connections to
    /// one server do not share one source address's ports), or `nil` for the system's choice.
    public var localAddress: String?

    /// A request for `ws://host:port/path` (`wss://` with `usesTLS`).
    public init(
        host: String, port: Int, path: String = "/", subprotocol: String? = nil, origin: String? = nil,
        headers: [String: String] = [:], usesTLS: Bool = false
    ) {
        self.usesTLS = usesTLS
        self.host = host
        self.port = port
        self.path = path
        self.subprotocol = subprotocol
        self.origin = origin
        self.headers = headers
        self.localAddress = nil
    }
}
