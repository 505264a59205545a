/// Who may do what on which table: the decision behind `unauthorized` and `forbidden`.
///
/// Without tokens (``open``) every client is admin; the server then binds loopback only unless told otherwise.
/// With tokens, a client must present one in `hello`; the token's grants give it a role per table-name pattern,
/// and where several grants match a table the highest role wins.
public struct AccessPolicy: Sendable {
    /// One line of a tokens file: a token grants `role` on the tables matching any of `tables`.
    public struct Grant: Sendable, Hashable {
        public var token: String
        public var role: Role
        public var tables: [TablePattern]

        public init(token: String, role: Role, tables: [TablePattern]) {
            self.token = token
            self.role = role
            self.tables = tables
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
    public static let open = AccessPolicy(grantsByToken: nil)

    private let grantsByToken: [String: [Grant]]?

    private init(grantsByToken: [String: [Grant]]?) {
        self.grantsByToken = grantsByToken
    }

    /// A policy that requires one of these tokens.
    public init(grants: [Grant]) {
        self.init(grantsByToken: Dictionary(grouping: grants, by: \.token))
    }

    /// Whether clients must present a token.
    public var requiresToken: Bool { grantsByToken != nil }

    /// Whose client ids a connection with `token` chooses among, for keeping refs apart: clients choose their ids,
    /// so two token holders may pick the same one. Empty without tokens (everyone is one principal); otherwise the
    /// token's SHA-256, so the store never holds a token.
    public func principal(token: String?) -> String {
        guard requiresToken, let token else { return "" }
        return TokenDigest.sha256Hex(token.utf8)
    }

    /// Whether `token` is one this policy knows (always true for the open policy).
    public func recognizes(token: String?) -> Bool {
        guard let grantsByToken else { return true }
        guard let token else { return false }
        return grantsByToken[token] != nil
    }

    /// The highest role `token` has on `table`, or nil when it has none.
    public func role(token: String?, table: String) -> Role? {
        guard let grantsByToken else { return .admin }
        guard let token, let grants = grantsByToken[token] else { return nil }
        return grants.filter { $0.tables.contains { $0.matches(table) } }.map(\.role).max()
    }

    /// Checks that `token` lets its holder in at all: with tokens, one must be given and known.
    public func authenticate(token: String?) throws(Denial) {
        guard requiresToken else { return }
        guard let token else {
            throw Denial(code: .unauthorized, message: "this server requires a token: send one in hello")
        }
        guard recognizes(token: token) else {
            throw Denial(code: .unauthorized, message: "the token given in hello is not valid on this server")
        }
    }

    /// Checks that `token` has at least `needed` on `table`.
    public func authorize(token: String?, table: String, needs needed: Role) throws(Denial) {
        try authenticate(token: token)
        guard requiresToken else { return }
        guard let role = role(token: token, table: table), role >= needed else {
            throw Denial(code: .forbidden, message: "this token may not \(needed.rawValue) table '\(table)'")
        }
    }
}
