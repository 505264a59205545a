/// What the lws context is created with; strings are copied into storage that outlives the context.
struct ContextSettings: Sendable {
    /// Listening port, 0 for an ephemeral one; `nil` for the client role (no listener).
    var port: Int?
    var host: String?
    /// WebSocket subprotocols the server accepts (client: empty).
    var subprotocols: [String]
    var handshakeTimeoutSeconds: Int
    /// Server role: stalled handshakes one peer address may have; nil: no cap.
    var maxHandshakesPerAddress: Int? = nil
    var httpIdleTimeoutSeconds: Int
    var pingAfterIdleSeconds: Int
    var hangUpAfterIdleSeconds: Int
    /// Connections lws must be able to hold: sizes its fd table.
    var maxConnections: Int
    /// Server role: serve TLS with this certificate and key.
    var serverTLS: ServerTLS? = nil
    /// Client role: how `wss://` connections verify servers.
    var clientTLS = ClientTLS()
}
