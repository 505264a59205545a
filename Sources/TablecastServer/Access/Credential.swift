/// A role on the tables matching any of `tables`: one line of a tokens file, or one member of a signed token's
/// `tablecast.tables`.
public struct TableGrant: Sendable, Hashable {
    public var role: Role
    public var tables: [TablePattern]

    public init(role: Role, tables: [TablePattern]) {
        self.role = role
        self.tables = tables
    }
}

/// Who a connection is and what it may do, once its token was checked (see ``AccessPolicy/authenticate(token:now:)``).
public struct Credential: Sendable, Hashable {
    /// Whose client ids the connection chooses among, for keeping refs apart: clients choose their ids, so two
    /// token holders may pick the same one. Empty without tokens (everyone is one principal); `user:` and the user
    /// for a verified user, so that a user's refs follow them from token to token; otherwise the token's SHA-256,
    /// so that the store never holds a token.
    public var principal: String
    /// The verified user: a signed token's `sub`, or a tokens-file entry's `user`.
    public var user: String?
    /// The verified display name, which the name given in `hello` never overrides.
    public var name: String?
    /// Roles by table-name pattern; the highest matching one wins.
    public var grants: [TableGrant]
    /// When the token expires, in seconds since the Unix epoch (a signed token's `exp`); nil: never. It is taken
    /// until ``endsAt``.
    public var expiry: Double?
    /// A signed token's `jti`, which a revocation list may name.
    public var tokenID: String?
    /// Whether it comes from a signed token, whose `sub` and `jti` a revocation list may name.
    public var signed: Bool

    public init(
        principal: String, user: String? = nil, name: String? = nil, grants: [TableGrant], expiry: Double? = nil,
        tokenID: String? = nil, signed: Bool = false
    ) {
        self.principal = principal
        self.user = user
        self.name = name
        self.grants = grants
        self.expiry = expiry
        self.tokenID = tokenID
        self.signed = signed
    }

    /// Everyone's credential on a server without tokens: admin of every table.
    public static let open = Credential(principal: "", grants: [TableGrant(role: .admin, tables: [TablePattern("*")])])

    /// When the credential ends: ``expiry`` plus ``TokenClaims/leeway``, for clocks that differ.
    public var endsAt: Double? { expiry.map { $0 + TokenClaims.leeway } }

    /// The highest role the credential has on `table`, or nil when it has none.
    public func role(on table: String) -> Role? {
        grants.filter { $0.tables.contains { $0.matches(table) } }.map(\.role).max()
    }
}
