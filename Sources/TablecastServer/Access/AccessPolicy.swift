/// Who may do what on which table: the decision behind `unauthorized` and `forbidden`.
///
/// Without tokens (``open``) every client is admin; the server then binds loopback only unless told otherwise.
/// With tokens, a client must present one in `hello`: a token of the tokens file, or a signed token (JWT) that
/// ``SignedTokenVerifier`` verifies. Either gives a ``Credential``: a role per table-name pattern (where several
/// match a table the highest role wins) and, when the token names one, a verified user and display name.
public struct AccessPolicy: Sendable {
    /// One line of a tokens file: a token grants `role` on the tables matching any of `tables`, and may name the
    /// user it belongs to and the name shown for them.
    public struct Grant: Sendable, Hashable {
        public var token: String
        public var role: Role
        public var tables: [TablePattern]
        /// The user, as a signed token's `sub` names one: the user's refs are kept under it.
        public var user: String?
        /// The display name shown in presence and history, as a signed token's `name`.
        public var name: String?

        public init(token: String, role: Role, tables: [TablePattern], user: String? = nil, name: String? = nil) {
            self.token = token
            self.role = role
            self.tables = tables
            self.user = user
            self.name = name
        }
    }

    /// Why a request was refused.
    public struct Denial: Error, Sendable, Hashable {
        public enum Code: String, Sendable {
            case unauthorized
            case forbidden
        }

        public let code: Code
        public let message: String
    }

    /// The policy with no tokens: everyone is admin on every table.
    public static let open = AccessPolicy(grantsByToken: nil, verifier: nil, revoked: [])

    private let grantsByToken: [String: [Grant]]?
    private let verifier: SignedTokenVerifier?
    /// `jti` and `sub` values whose signed tokens are refused.
    private let revoked: Set<String>

    private init(grantsByToken: [String: [Grant]]?, verifier: SignedTokenVerifier?, revoked: Set<String>) {
        self.grantsByToken = grantsByToken
        self.verifier = verifier
        self.revoked = revoked
    }

    /// A policy that requires a token: one of `grants` (a tokens file; nil: none), or a signed token `verifier`
    /// accepts whose `jti` and `sub` are not `revoked`. At least one of the two must be given.
    public init(grants: [Grant]?, verifier: SignedTokenVerifier? = nil, revoked: Set<String> = []) {
        precondition(grants != nil || verifier != nil, "a policy with tokens needs a tokens file or keys")
        self.init(
            grantsByToken: grants.map { Dictionary(grouping: $0, by: \.token) }, verifier: verifier, revoked: revoked)
    }

    /// Whether clients must present a token.
    public var requiresToken: Bool { grantsByToken != nil || verifier != nil }

    /// The credential `token` gives at `now` (seconds since the Unix epoch): every connection's without tokens;
    /// otherwise a tokens-file entry's or a verified signed token's. A missing token is told apart from a wrong one.
    public func authenticate(token: String?, now: Double) throws(Denial) -> Credential {
        guard requiresToken else { return .open }
        guard let token else {
            throw Denial(code: .unauthorized, message: "this server requires a token: send one in hello")
        }
        if let grants = grantsByToken?[token] {
            let user = grants.lazy.compactMap(\.user).first
            return Credential(
                principal: user.map { "user:" + $0 } ?? TokenDigest.sha256Hex(token.utf8), user: user,
                name: grants.lazy.compactMap(\.name).first,
                grants: grants.map { TableGrant(role: $0.role, tables: $0.tables) })
        }
        guard let verifier, SignedTokenVerifier.looksSigned(token) else {
            throw Denial(
                code: .unauthorized, message: "unknown token: the token given in hello is not valid on this server")
        }
        let claims = try verifier.verify(token, now: now)
        if let id = claims.tokenID, revoked.contains(id) { throw TokenClaims.refusal("it was revoked") }
        if revoked.contains(claims.subject) { throw TokenClaims.refusal("its user's tokens were revoked") }
        return claims.credential
    }

    /// The highest role `credential` (nil: the connection gave no token) has on `table`, or nil when it has none.
    public func role(_ credential: Credential?, on table: String) -> Role? {
        guard requiresToken else { return .admin }
        return credential?.role(on: table)
    }

    /// Checks that `credential` (nil: the connection gave no token) lets its holder in at `now`: with tokens, one
    /// must have been given, and not have expired since.
    public func authenticate(_ credential: Credential?, now: Double) throws(Denial) {
        guard requiresToken else { return }
        guard let credential else {
            throw Denial(code: .unauthorized, message: "this server requires a token: send one in hello")
        }
        if let endsAt = credential.endsAt, now >= endsAt { throw TokenClaims.refusal("it has expired") }
    }

    /// Checks that `credential` (nil: the connection gave no token) has at least `needed` on `table` at `now`.
    public func authorize(_ credential: Credential?, table: String, needs needed: Role, now: Double) throws(Denial) {
        try authenticate(credential, now: now)
        guard requiresToken else { return }
        guard let role = credential?.role(on: table), role >= needed else {
            throw Denial(code: .forbidden, message: "this token may not \(needed.rawValue) table '\(table)'")
        }
    }
}
