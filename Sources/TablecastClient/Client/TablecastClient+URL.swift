import WebSocketTransport

extension TablecastClient {
    /// The WebSocket request for a server URL (`ws://host:port/path` or `wss://…`), with the protocol's
    /// subprotocol.
    public static func parse(_ url: String) throws -> WebSocketConnectRequest {
        let usesTLS = url.hasPrefix("wss://")
        guard usesTLS || url.hasPrefix("ws://") else { throw TablecastClientError.invalidURL(url) }
        let rest = url.dropFirst(usesTLS ? 6 : 5)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        let path = rest[slash...].isEmpty ? "/" : String(rest[slash...])
        var host = String(authority)
        var port = usesTLS ? 443 : 80
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
            guard let number = Int(authority[authority.index(after: colon)...]), (1...65535).contains(number) else {
                throw TablecastClientError.invalidURL(url)
            }
            port = number
            host = String(authority[..<colon])
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw TablecastClientError.invalidURL(url) }
        return WebSocketConnectRequest(
            host: host, port: port, path: path, subprotocol: "tablecast.v1", usesTLS: usesTLS)
    }
}
