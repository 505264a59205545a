import Foundation
import JWTKit
import TableModel

/// Verifies signed tokens (JWT, compact form) against the server's keys: jwt-kit checks each signature; the claims
/// are then read and checked by ``TokenClaims``.
///
/// A token's header names its algorithm, and only keys of that algorithm are tried: an HMAC secret for `HS256`,
/// `HS384` and `HS512`; an RSA public key for `RS256`, `RS384` and `RS512`; a P-256 or P-384 key for `ES256` or
/// `ES384`; an Ed25519 key for `EdDSA`. So `alg: none`, or an `HS256` token whose secret is the server's RSA public
/// key, finds no key and is refused. Several keys of one kind are each tried (a key being rotated).
public struct SignedTokenVerifier: Sendable {
    /// One configured key, as the algorithms it verifies, by their JOSE names.
    public struct Key: Sendable {
        let algorithms: [String: any JWTAlgorithm]

        /// An HMAC secret: its bytes are the key of `HS256`, and of `HS384` and `HS512` when it is as long as
        /// their digests (48 and 64 bytes; RFC 7518, 3.2). Throws when it is shorter than 32 bytes.
        public static func secret(_ bytes: [UInt8]) async throws -> Key {
            guard bytes.count >= 32 else { throw KeyError.shortSecret(bytes.count) }
            var algorithms: [String: any JWTAlgorithm] = [:]
            for (name, digest, size) in [
                ("HS256", DigestAlgorithm.sha256, 32), ("HS384", .sha384, 48), ("HS512", .sha512, 64),
            ]
            where bytes.count >= size {
                let keys = await JWTKeyCollection().add(hmac: HMACKey(from: bytes), digestAlgorithm: digest)
                algorithms[name] = try await keys.getKey()
            }
            return Key(algorithms: algorithms)
        }

        /// A PEM public key, its algorithms chosen by its type: RSA (`RS256`, `RS384`, `RS512`), EC P-256
        /// (`ES256`), EC P-384 (`ES384`) or Ed25519 (`EdDSA`). Throws when it is none of them.
        public static func publicKey(pem: String) async throws -> Key {
            let keys = JWTKeyCollection()
            if let rsa = try? Insecure.RSA.PublicKey(pem: pem) {
                var algorithms: [String: any JWTAlgorithm] = [:]
                for (name, digest) in [("RS256", DigestAlgorithm.sha256), ("RS384", .sha384), ("RS512", .sha512)] {
                    algorithms[name] = try await JWTKeyCollection().add(rsa: rsa, digestAlgorithm: digest).getKey()
                }
                return Key(algorithms: algorithms)
            } else if let p256 = try? ES256PublicKey(pem: pem) {
                return Key(algorithms: ["ES256": try await keys.add(ecdsa: p256).getKey()])
            } else if let p384 = try? ES384PublicKey(pem: pem) {
                return Key(algorithms: ["ES384": try await keys.add(ecdsa: p384).getKey()])
            } else if let ed25519 = try? EdDSA.PublicKey(pem: pem) {
                return Key(algorithms: ["EdDSA": try await keys.add(eddsa: ed25519).getKey()])
            }
            throw KeyError.notAPublicKey
        }
    }

    /// A key that cannot be used.
    public enum KeyError: Error, CustomStringConvertible {
        /// An HMAC secret of fewer bytes than HS256's digest.
        case shortSecret(Int)
        /// A PEM file that holds no RSA, P-256, P-384 or Ed25519 public key.
        case notAPublicKey

        public var description: String {
            switch self {
            case .shortSecret(let count):
                "the secret is \(count) bytes: HS256 needs at least 32 (HS384 48, HS512 64)"
            case .notAPublicKey: "not a PEM public key of type RSA, EC P-256, EC P-384 or Ed25519"
            }
        }
    }

    /// The longest token looked at, in bytes: longer ones are refused unread.
    public static let maxTokenBytes = 16 << 10

    let keys: [Key]
    /// The `iss` and `aud` a token must carry, when set.
    let issuer: String?
    let audience: String?

    public init(keys: [Key], issuer: String? = nil, audience: String? = nil) {
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
    }

    /// The algorithms some key verifies, for messages.
    var algorithms: [String] { Set(keys.flatMap(\.algorithms.keys)).sorted() }

    /// Whether `token` has the shape of a signed token: three parts joined by dots.
    static func looksSigned(_ token: String) -> Bool {
        token.utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }

    /// The claims of `token` once its signature verified and its claims check at `now` (seconds since the Unix
    /// epoch). Every refusal is `unauthorized` with a reason that does not quote the token.
    public func verify(_ token: String, now: Double) throws(AccessPolicy.Denial) -> TokenClaims {
        guard token.utf8.count <= Self.maxTokenBytes else {
            throw TokenClaims.refusal("it is longer than \(Self.maxTokenBytes) bytes")
        }
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).map(Array.init)
        guard parts.count == 3, parts[0...1].allSatisfy({ !$0.isEmpty && $0.allSatisfy(Self.isBase64URL) }) else {
            throw TokenClaims.refusal("it is malformed (a signed token is three base64url parts joined by dots)")
        }
        guard let headerBytes = Self.base64URLDecoded(parts[0]),
            case .object(let header)? = try? JSONValue(parsing: headerBytes)
        else { throw TokenClaims.refusal("its header is not a JSON object") }
        guard case .string(let algorithm)? = header["alg"] else { throw TokenClaims.refusal("its header has no 'alg'") }
        if algorithm.lowercased() == "none" {
            throw TokenClaims.refusal("unsigned tokens ('alg' none) are not accepted")
        }
        // A critical extension we do not implement must not be ignored (RFC 7515, 4.1.11).
        if header["crit"] != nil { throw TokenClaims.refusal("its header has critical extensions ('crit')") }
        let candidates = keys.compactMap { $0.algorithms[algorithm] }
        guard !candidates.isEmpty else {
            let named = algorithms.contains(algorithm) || Self.knownAlgorithms.contains(algorithm)
            throw TokenClaims.refusal(
                "its algorithm \(named ? algorithm : "(unknown)") matches none of the server's keys "
                    + "(\(algorithms.joined(separator: ", ")))")
        }
        // jwt-kit's own check of each key (HMAC compared in constant time, RSA, ECDSA, EdDSA), called directly:
        // its key collection is an actor, and the connection router decides a hello without waiting.
        let signedPart = parts[0] + [UInt8(ascii: ".")] + parts[1]
        guard parts[2].allSatisfy(Self.isBase64URL), let signature = Self.base64URLDecoded(parts[2]),
            candidates.contains(where: { (try? $0.verify(signature, signs: signedPart)) == true })
        else { throw TokenClaims.refusal("its signature does not verify") }
        guard let payloadBytes = Self.base64URLDecoded(parts[1]), let payload = try? JSONValue(parsing: payloadBytes)
        else { throw TokenClaims.refusal("its payload is not JSON") }
        let claims = try TokenClaims.parse(payload)
        try claims.check(now: now, issuer: issuer, audience: audience)
        return claims
    }

    /// JOSE algorithm names a message may repeat (any other `alg` is the token's own text).
    private static let knownAlgorithms: Set<String> = [
        "HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
        "EdDSA",
    ]

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }

    /// base64url without padding (RFC 7515, section 2), as Foundation's base64 once the alphabet is mapped back.
    private static func base64URLDecoded(_ text: [UInt8]) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        var base64 = text.map {
            $0 == UInt8(ascii: "-") ? UInt8(ascii: "+") : $0 == UInt8(ascii: "_") ? UInt8(ascii: "/") : $0
        }
        base64 += Array(repeating: UInt8(ascii: "="), count: (4 - text.count % 4) % 4)
        return Data(base64Encoded: Data(base64)).map(Array.init)
    }
}
