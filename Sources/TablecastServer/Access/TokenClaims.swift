import TableModel

/// The claims of a signed token (JWT) whose signature was verified, read and checked: a pure value, no clock (the
/// time is passed in) and no cryptography (``SignedTokenVerifier`` checks the signature first).
///
/// ```json
/// {"sub": "ana", "exp": 1795425355, "name": "Ana", "tablecast": {"tables": {"team-*": "write", "groceries": "read"}}}
/// ```
public struct TokenClaims: Sendable, Hashable {
    /// How far a clock may be off: a token is taken until `exp` plus this, and from `nbf` minus this. A connection
    /// is closed at `exp` plus this.
    public static let leeway: Double = 5

    /// The longest `sub`, `name` and `jti` taken, in characters (`name` as `hello`'s name: 64).
    static let maxUserLength = 256
    static let maxNameLength = 64

    /// `sub`: the user.
    public var subject: String
    /// `exp`, seconds since the Unix epoch.
    public var expiry: Double
    /// `nbf`, seconds since the Unix epoch.
    public var notBefore: Double?
    /// `iat`, seconds since the Unix epoch.
    public var issuedAt: Double?
    /// `name`: the display name shown to others.
    public var name: String?
    /// `jti`: the token's id, for revocation.
    public var tokenID: String?
    /// `iss`.
    public var issuer: String?
    /// `aud`: one string or an array of them.
    public var audience: [String]
    /// `tablecast.tables`: a role per table-name pattern.
    public var grants: [TableGrant]

    /// Reads the claims of a token's payload; a claim of the wrong type, a missing `sub` or `exp`, or an unknown
    /// role is a refusal naming the claim.
    public static func parse(_ payload: JSONValue) throws(AccessPolicy.Denial) -> TokenClaims {
        guard case .object(let claims) = payload else { throw refusal("its payload is not a JSON object") }
        guard let subject = try string(claims, "sub", max: maxUserLength) else {
            throw refusal("it has no 'sub' (the user)")
        }
        guard let expiry = try number(claims, "exp") else { throw refusal("it has no 'exp' (its expiry)") }
        let audience: [String]
        switch claims["aud"] {
        case nil: audience = []
        case .string(let one)?: audience = [one]
        case .array(let many)?:
            audience = try many.map { (value) throws(AccessPolicy.Denial) -> String in
                guard case .string(let one) = value else { throw refusal("'aud' must be a string or strings") }
                return one
            }
        default: throw refusal("'aud' must be a string or strings")
        }
        return TokenClaims(
            subject: subject, expiry: expiry, notBefore: try number(claims, "nbf"), issuedAt: try number(claims, "iat"),
            name: try string(claims, "name", max: maxNameLength),
            tokenID: try string(claims, "jti", max: maxUserLength),
            issuer: try string(claims, "iss", max: .max), audience: audience, grants: try grants(claims["tablecast"]))
    }

    /// Checks the token's times at `now` (seconds since the Unix epoch, with ``leeway``) and, when the server
    /// expects them, its issuer and audience.
    public func check(now: Double, issuer expectedIssuer: String?, audience expectedAudience: String?)
        throws(AccessPolicy.Denial)
    {
        guard now < expiry + Self.leeway else { throw Self.refusal("it has expired") }
        if let notBefore, now + Self.leeway < notBefore { throw Self.refusal("it is not valid yet ('nbf')") }
        if let expectedIssuer, issuer != expectedIssuer { throw Self.refusal("it was issued by another issuer") }
        if let expectedAudience, !audience.contains(expectedAudience) {
            throw Self.refusal("it is meant for another audience")
        }
    }

    /// The credential the token gives: its user's refs are kept under `user:` and the `sub`.
    public var credential: Credential {
        Credential(
            principal: "user:" + subject, user: subject, name: name, grants: grants, expiry: expiry,
            tokenID: tokenID, signed: true)
    }

    /// A refusal of a signed token, saying why and never quoting it.
    static func refusal(_ why: String) -> AccessPolicy.Denial {
        AccessPolicy.Denial(code: .unauthorized, message: "token refused: \(why)")
    }

    private static func string(_ claims: [String: JSONValue], _ key: String, max: Int) throws(AccessPolicy.Denial)
        -> String?
    {
        switch claims[key] {
        case nil: return nil
        case .string(let value)? where !value.isEmpty && value.count <= max: return value
        default:
            throw refusal("'\(key)' must be a non-empty string" + (max < .max ? " of at most \(max) characters" : ""))
        }
    }

    private static func number(_ claims: [String: JSONValue], _ key: String) throws(AccessPolicy.Denial) -> Double? {
        switch claims[key] {
        case nil: return nil
        case .number(let value)? where value.isFinite: return value
        default: throw refusal("'\(key)' must be a number of seconds since 1970")
        }
    }

    /// `{"tables": {"<pattern>": "read" | "write" | "admin"}}`; none (no `tablecast` claim) lets the user in to no
    /// table.
    private static func grants(_ claim: JSONValue?) throws(AccessPolicy.Denial) -> [TableGrant] {
        guard let claim else { return [] }
        guard case .object(let members) = claim, members.keys.allSatisfy({ $0 == "tables" }),
            case .object(let tables)? = members["tables"] ?? .object([:])
        else { throw refusal("'tablecast' must be {\"tables\": {\"<pattern>\": \"read\" | \"write\" | \"admin\"}}") }
        return try tables.sorted { $0.key < $1.key }.map { (pattern, role) throws(AccessPolicy.Denial) -> TableGrant in
            guard !pattern.isEmpty, case .string(let name) = role, let role = Role(rawValue: name) else {
                throw refusal("each of 'tablecast.tables' must map a table pattern to \"read\", \"write\" or \"admin\"")
            }
            return TableGrant(role: role, tables: [TablePattern(pattern)])
        }
    }
}
