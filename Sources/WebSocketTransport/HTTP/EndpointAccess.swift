/// Who may read `/metrics` (`/healthz`, static files and WebSocket upgrades are not affected): a server bound to
/// a public address need not tell the world its load.
public enum EndpointAccess: Sendable, Hashable {
    /// Anyone who can reach the port (the default).
    case everyone
    /// Only peers on a loopback address (a collector or health check on the same machine).
    case loopback
    /// Loopback peers, and others that send `Authorization: Bearer <token>`.
    case loopbackOrToken(String)

    /// Whether a request from `peer` (an IP address) with this `Authorization` header may read `/metrics`.
    func allows(peer: String, authorization: String?) -> Bool {
        switch self {
        case .everyone:
            return true
        case .loopback:
            return Self.isLoopback(peer)
        case .loopbackOrToken(let token):
            guard !Self.isLoopback(peer) else { return true }
            guard let authorization, authorization.hasPrefix("Bearer ") else { return false }
            return Self.constantTimeEqual(Array(authorization.utf8.dropFirst(7)), Array(token.utf8))
        }
    }

    static func isLoopback(_ address: String) -> Bool {
        address.hasPrefix("127.") || address == "::1"
    }

    /// Compares without stopping at the first difference, so the time taken does not tell how much of a guess matched.
    private static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
