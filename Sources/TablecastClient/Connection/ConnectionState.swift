/// Where a ``TablecastClient``'s connection stands.
public enum ConnectionState: Hashable, Sendable, CustomStringConvertible {
    /// Not started (before ``TablecastClient/connect()``).
    case idle
    /// Opening the WebSocket and saying hello.
    case connecting
    /// Welcomed by the server: requests flow.
    case live
    /// The connection was lost; the next attempt starts after the delay (exponential backoff with jitter).
    case reconnecting(in: Duration)
    /// Closed by ``TablecastClient/close()``; it stays closed.
    case closed

    public var description: String {
        switch self {
        case .idle: "idle"
        case .connecting: "connecting"
        case .live: "live"
        case .reconnecting(let delay):
            // Tenths of a second: the backoff's jitter makes more digits noise.
            "reconnecting in \(Double((delay / .milliseconds(100)).rounded()) / 10)s"
        case .closed: "closed"
        }
    }
}
