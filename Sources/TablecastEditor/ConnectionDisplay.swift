/// How the connection looks to the person at the keyboard.
public enum ConnectionDisplay: Hashable, Sendable {
    /// Saying hello and subscribing.
    case connecting
    /// Subscribed and in step with the server.
    case live
    /// In `seconds`, after losing the connection for `reason` (nil: not known).
    case reconnecting(seconds: Int, reason: String? = nil)
    /// Given up (or quit): nothing more will come.
    case closed

    /// The status bar's words for it.
    public var text: String {
        switch self {
        case .connecting: "connecting…"
        case .live: "● live"
        case .reconnecting(let seconds, let reason): "reconnecting in \(seconds)s" + (reason.map { ": \($0)" } ?? "")
        case .closed: "closed"
        }
    }
}
