import WebSocketTransport

/// Who sent a request: the connection it came on and the client behind it.
struct Requester: Sendable, Hashable {
    let connection: WebSocketConnectionID
    /// The client id: chosen in `hello`, or assigned (`anon-…`).
    let client: String
    /// The display name shown in presence; nil when the client gave none (it then only counts as a viewer).
    let name: String?
    /// The verified user behind the connection (a signed token's `sub`, a tokens-file entry's `user`), if any.
    let user: String?
    /// Whether the client said hello with a stable id, so its refs are kept for idempotent retries across
    /// reconnects; an anonymous id lives only as long as its connection.
    let stable: Bool
    /// Whose client ids `client` is one of (see ``Credential/principal``).
    let principal: String

    /// Who owns the requester's refs.
    var refOwner: RefOwner { RefOwner(principal: principal, client: client) }

    /// The connection's key in presence: unique for the server's life, the same on every table.
    var presenceKey: String { "c\(connection.rawValue)" }
}
