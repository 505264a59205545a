/// A request that failed on this side of the wire. Refusals by the server are thrown as `ProtocolError`
/// (its `code` is the wire error code).
public enum TablecastClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The client was closed before the request was answered.
    case closed
    /// The URL is not `ws://host[:port][/path]` or `wss://host[:port][/path]`.
    case invalidURL(String)
    /// The server answered with a message of an unexpected type.
    case unexpectedResponse(String)

    public var description: String {
        switch self {
        case .closed: "the client is closed"
        case .invalidURL(let url): "not a ws:// or wss:// URL: \(url)"
        case .unexpectedResponse(let type): "unexpected response: \(type)"
        }
    }
}
