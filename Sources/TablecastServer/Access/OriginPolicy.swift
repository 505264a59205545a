/// Which browser pages may open a connection, judged by the upgrade request's `Origin` and `Host` headers.
///
/// Browsers send `Origin` with every WebSocket upgrade; without a check, any site a user visits could act through
/// their browser on the server (cross-site WebSocket hijacking). Accepted: requests without `Origin` (not a
/// browser), the listed origins, and the server's own page however the browser reached it: an `Origin` of
/// `http(s)://` plus the same request's `Host`. A page of another site sends its own origin while `Host` names this
/// server, so the two do not match. On a loopback server `Host` must also be a loopback name: everyone is admin
/// there, and a site whose name an attacker points at 127.0.0.1 (DNS rebinding) would otherwise pass as our own.
struct OriginPolicy: Sendable {
    /// Origins accepted whatever the `Host`, lowercased.
    let listed: Set<String>
    /// The server listens on loopback only: the `Host` rule applies to loopback names only.
    let loopbackOnly: Bool

    init(listed: [String], loopbackOnly: Bool) {
        self.listed = Set(listed.map { $0.lowercased() })
        self.loopbackOnly = loopbackOnly
    }

    func allows(origin: String?, host: String?) -> Bool {
        guard let origin = origin?.lowercased() else { return true }
        if listed.contains(origin) { return true }
        guard let host = host?.lowercased(), !host.isEmpty else { return false }
        guard origin == "http://" + host || origin == "https://" + host else { return false }
        return !loopbackOnly || Self.isLoopback(hostHeader: host)
    }

    /// `localhost`, `127.x.x.x` or `[::1]`, with or without a port.
    static func isLoopback(hostHeader: String) -> Bool {
        let name: Substring
        if hostHeader.hasPrefix("[") {
            name = hostHeader.dropFirst().prefix { $0 != "]" }
        } else {
            name = hostHeader.prefix { $0 != ":" }
        }
        if name == "localhost" || name == "::1" { return true }
        let octets = name.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy(isOctet)
    }

    /// A number from 0 to 255 in decimal digits only: `UInt8("+0")` is 0, but `127.+0.0.1` names no address.
    private static func isOctet(_ text: Substring) -> Bool {
        text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } && UInt8(text) != nil
    }
}
