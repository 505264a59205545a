import Foundation
import JWTKit
import TableModel
import TablecastServer
import TablecastTesting
import XCTest

/// Signed tokens: their claims read and checked (``TokenClaims``), and whole tokens minted here with jwt-kit's keys
/// and verified (``SignedTokenVerifier``): every refusal is `unauthorized`, says why and never quotes the token.
final class SignedTokenTests: XCTestCase {
    private let now = 1_800_000_000.0

    private func parse(_ json: JSONValue) throws -> TokenClaims { try TokenClaims.parse(json) }

    private func refusal(_ body: () throws -> Any) -> String? {
        do {
            _ = try body()
            return nil
        } catch let denial as AccessPolicy.Denial {
            XCTAssertEqual(denial.code, .unauthorized)
            return denial.message
        } catch {
            XCTFail("not a denial: \(error)")
            return nil
        }
    }

    func testClaimsAreReadWithTheirGrants() throws {
        let claims = try parse([
            "sub": "ana", "exp": 1_800_000_060, "nbf": 1_799_999_000, "iat": 1_799_999_000, "name": "Ana",
            "jti": "t-1", "iss": "app", "aud": ["tablecast", "other"],
            "tablecast": ["tables": ["team-*": "write", "groceries": "read", "team-admin": "admin"]],
        ])
        XCTAssertEqual(claims.subject, "ana")
        XCTAssertEqual(claims.expiry, 1_800_000_060)
        XCTAssertEqual(claims.name, "Ana")
        XCTAssertEqual(claims.tokenID, "t-1")
        XCTAssertEqual(claims.audience, ["tablecast", "other"])
        let credential = claims.credential
        XCTAssertEqual(credential.principal, "user:ana")
        XCTAssertEqual(credential.user, "ana")
        XCTAssertEqual(credential.expiry, 1_800_000_060)
        XCTAssertEqual(credential.endsAt, 1_800_000_060 + TokenClaims.leeway)
        XCTAssertEqual(credential.role(on: "team-admin"), .admin, "the highest matching role wins")
        XCTAssertEqual(credential.role(on: "team-x"), .write)
        XCTAssertEqual(credential.role(on: "groceries"), .read)
        XCTAssertNil(credential.role(on: "other"))
        XCTAssertNoThrow(try claims.check(now: now, issuer: "app", audience: "tablecast"))
    }

    func testWithoutTablecastClaimNoTableIsGranted() throws {
        let claims = try parse(["sub": "bo", "exp": 1_800_000_060])
        XCTAssertEqual(claims.grants, [])
        XCTAssertNil(claims.name)
        XCTAssertNil(claims.credential.role(on: "anything"))
    }

    func testMissingOrMistypedClaimsAreRefusedByName() {
        let cases: [(JSONValue, String)] = [
            (["exp": 1_800_000_060], "token refused: it has no 'sub' (the user)"),
            (["sub": "ana"], "token refused: it has no 'exp' (its expiry)"),
            (["sub": "", "exp": 1], "token refused: 'sub' must be a non-empty string of at most 256 characters"),
            (["sub": 7, "exp": 1], "token refused: 'sub' must be a non-empty string of at most 256 characters"),
            (["sub": "ana", "exp": "soon"], "token refused: 'exp' must be a number of seconds since 1970"),
            (["sub": "ana", "exp": 1, "nbf": true], "token refused: 'nbf' must be a number of seconds since 1970"),
            (
                ["sub": "ana", "exp": 1, "name": .string(String(repeating: "n", count: 65))],
                "token refused: 'name' must be a non-empty string of at most 64 characters"
            ),
            (["sub": "ana", "exp": 1, "aud": [1]], "token refused: 'aud' must be a string or strings"),
            (
                ["sub": "ana", "exp": 1, "tablecast": ["tables": ["t": "owner"]]],
                "token refused: each of 'tablecast.tables' must map a table pattern to \"read\", \"write\" or \"admin\""
            ),
            (
                ["sub": "ana", "exp": 1, "tablecast": ["tables": ["*"]]],
                "token refused: 'tablecast' must be {\"tables\": {\"<pattern>\": \"read\" | \"write\" | \"admin\"}}"
            ),
            ([1, 2], "token refused: its payload is not a JSON object"),
        ]
        for (payload, message) in cases {
            XCTAssertEqual(refusal { try parse(payload) }, message, "\(payload)")
        }
    }

    func testTimesIssuerAndAudienceAreChecked() throws {
        let claims = try parse(["sub": "ana", "exp": 1_800_000_000, "nbf": 1_800_000_100, "iss": "app", "aud": "tc"])
        let leeway = TokenClaims.leeway
        XCTAssertEqual(
            refusal { try claims.check(now: now + leeway, issuer: nil, audience: nil) }, "token refused: it has expired"
        )
        XCTAssertEqual(
            refusal { try claims.check(now: now + 1 - leeway, issuer: nil, audience: nil) },
            "token refused: it is not valid yet ('nbf')")
        let current = try parse(["sub": "ana", "exp": 1_800_000_060, "iss": "app", "aud": "tc"])
        XCTAssertNoThrow(try current.check(now: now, issuer: "app", audience: "tc"))
        XCTAssertEqual(
            refusal { try current.check(now: now, issuer: "other", audience: nil) },
            "token refused: it was issued by another issuer")
        XCTAssertEqual(
            refusal { try current.check(now: now, issuer: nil, audience: "elsewhere") },
            "token refused: it is meant for another audience")
        let late = try parse(["sub": "ana", "exp": 1_800_000_000])
        XCTAssertNoThrow(
            try late.check(now: now + leeway - 0.5, issuer: nil, audience: nil), "within the leeway after exp")
    }

    // MARK: - Whole tokens

    private static func base64URL(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// A compact token of `header` and `payload` signed by `key` (a jwt-kit algorithm with its private key).
    private static func mint(header: JSONValue, payload: JSONValue, key: any JWTAlgorithm) throws -> String {
        let signed = base64URL(header.jsonBytes) + "." + base64URL(payload.jsonBytes)
        return signed + "." + base64URL(try key.sign(Array(signed.utf8)))
    }

    private func hmac(_ secret: String, _ digest: DigestAlgorithm) async throws -> any JWTAlgorithm {
        try await JWTKeyCollection().add(hmac: HMACKey(from: Array(secret.utf8)), digestAlgorithm: digest).getKey()
    }

    private var payload: JSONValue {
        ["sub": "ana", "exp": .number(now + 60), "tablecast": ["tables": ["*": "write"]]]
    }

    func testHMACTokensVerifyWithTheSecretForEachDigest() async throws {
        let secret = String(repeating: "s3cret-", count: 10)
        let verifier = SignedTokenVerifier(keys: [try await .secret(Array(secret.utf8))])
        for (name, digest) in [("HS256", DigestAlgorithm.sha256), ("HS384", .sha384), ("HS512", .sha512)] {
            let token = try Self.mint(
                header: ["alg": .string(name), "typ": "JWT"], payload: payload,
                key: try await hmac(secret, digest))
            XCTAssertEqual(try verifier.verify(token, now: now).subject, "ana", name)
        }
        let forged = try Self.mint(
            header: ["alg": "HS256"], payload: payload,
            key: try await hmac("another-secret-of-at-least-thirty-two-bytes", .sha256))
        XCTAssertEqual(
            refusal { try verifier.verify(forged, now: now) }, "token refused: its signature does not verify")
        // The header claims HS512, the signature is HS256's: the digest comes from the header, so it fails.
        let mislabelled = try Self.mint(
            header: ["alg": "HS512"], payload: payload, key: try await hmac(secret, .sha256))
        XCTAssertEqual(
            refusal { try verifier.verify(mislabelled, now: now) }, "token refused: its signature does not verify")
    }

    func testPublicKeysVerifyTheirAlgorithmOnlyAndRotationTriesEach() async throws {
        let old = ES256PrivateKey()
        let new = ES256PrivateKey()
        let verifier = SignedTokenVerifier(keys: [
            try await .publicKey(pem: old.publicKey.pemRepresentation),
            try await .publicKey(pem: new.publicKey.pemRepresentation),
        ])
        for key in [old, new] {
            let token = try Self.mint(
                header: ["alg": "ES256"], payload: payload, key: try await JWTKeyCollection().add(ecdsa: key).getKey())
            XCTAssertEqual(try verifier.verify(token, now: now).subject, "ana")
        }
        let stranger = try Self.mint(
            header: ["alg": "ES256"], payload: payload,
            key: try await JWTKeyCollection().add(ecdsa: ES256PrivateKey()).getKey())
        XCTAssertEqual(
            refusal { try verifier.verify(stranger, now: now) }, "token refused: its signature does not verify")
        // HS256 signed with the public key's PEM as its secret: no HMAC key is configured, so nothing verifies it.
        let confused = try Self.mint(
            header: ["alg": "HS256"], payload: payload, key: try await hmac(new.publicKey.pemRepresentation, .sha256))
        XCTAssertEqual(
            refusal { try verifier.verify(confused, now: now) },
            "token refused: its algorithm HS256 matches none of the server's keys (ES256)")
        let ed = try EdDSA.PrivateKey()
        let edVerifier = SignedTokenVerifier(keys: [try await .publicKey(pem: ed.publicKey.pemRepresentation)])
        let edToken = try Self.mint(
            header: ["alg": "EdDSA"], payload: payload, key: try await JWTKeyCollection().add(eddsa: ed).getKey())
        XCTAssertEqual(try edVerifier.verify(edToken, now: now).subject, "ana")
        do {
            _ = try await SignedTokenVerifier.Key.publicKey(
                pem: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
            XCTFail("a PEM that holds no key was taken")
        } catch let error as SignedTokenVerifier.KeyError {
            XCTAssertEqual(error.description, "not a PEM public key of type RSA, EC P-256, EC P-384 or Ed25519")
        }
    }

    func testUnsignedMalformedAndOversizedTokensAreRefused() async throws {
        let verifier = SignedTokenVerifier(keys: [try await .secret(Array(String(repeating: "k", count: 32).utf8))])
        let header = Self.base64URL(#"{"alg":"none"}"#.utf8)
        let body = Self.base64URL(payload.jsonBytes)
        for signature in ["", "AAAA"] {
            XCTAssertEqual(
                refusal { try verifier.verify("\(header).\(body).\(signature)", now: now) },
                "token refused: unsigned tokens ('alg' none) are not accepted")
        }
        for malformed in ["..", "\(header)..AAAA", "\(header).\(body).AA.AA", "\(header).b@d.AAAA"] {
            XCTAssertEqual(
                refusal { try verifier.verify(malformed, now: now) },
                "token refused: it is malformed (a signed token is three base64url parts joined by dots)")
        }
        let odd = Self.base64URL(#"{"alg":"HS256","crit":["exp"]}"#.utf8)
        XCTAssertEqual(
            refusal { try verifier.verify("\(odd).\(body).AAAA", now: now) },
            "token refused: its header has critical extensions ('crit')")
        let unknown = Self.base64URL(#"{"alg":"secret-sauce"}"#.utf8)
        XCTAssertEqual(
            refusal { try verifier.verify("\(unknown).\(body).AAAA", now: now) },
            "token refused: its algorithm (unknown) matches none of the server's keys (HS256)")
        do {
            _ = try await SignedTokenVerifier.Key.secret(Array("short".utf8))
            XCTFail("a 5-byte secret was taken")
        } catch let error as SignedTokenVerifier.KeyError {
            XCTAssertEqual(error.description, "the secret is 5 bytes: HS256 needs at least 32 (HS384 48, HS512 64)")
        }
        XCTAssertEqual(
            refusal {
                try verifier.verify(String(repeating: "a", count: SignedTokenVerifier.maxTokenBytes + 1), now: now)
            },
            "token refused: it is longer than \(SignedTokenVerifier.maxTokenBytes) bytes")
        XCTAssertEqual(
            refusal { try verifier.verify("AAAA.AAAA.AAAA", now: now) },
            "token refused: its header is not a JSON object")
    }

    func testAPolicyRefusesRevokedTokensByIDOrUserAndKeepsTheTokensFile() async throws {
        let secret = String(repeating: "r", count: 32)
        let policy = AccessPolicy(
            grants: [.init(token: "file-token", role: .read, tables: [TablePattern("*")])],
            verifier: SignedTokenVerifier(keys: [try await .secret(Array(secret.utf8))]), revoked: ["lost-1", "bo"])
        func token(_ claims: JSONValue) async throws -> String {
            try Self.mint(header: ["alg": "HS256"], payload: claims, key: try await hmac(secret, .sha256))
        }
        let kept = try await token(["sub": "ana", "jti": "ok-2", "exp": .number(now + 60)])
        XCTAssertEqual(try policy.authenticate(token: kept, now: now).user, "ana")
        let lost = try await token(["sub": "ana", "jti": "lost-1", "exp": .number(now + 60)])
        XCTAssertEqual(refusal { try policy.authenticate(token: lost, now: now) }, "token refused: it was revoked")
        let bo = try await token(["sub": "bo", "exp": .number(now + 60)])
        XCTAssertEqual(
            refusal { try policy.authenticate(token: bo, now: now) }, "token refused: its user's tokens were revoked")
        XCTAssertEqual(try policy.authenticate(token: "file-token", now: now).role(on: "t"), .read)
        XCTAssertEqual(
            refusal { try policy.authenticate(token: "a.b", now: now) },
            "unknown token: the token given in hello is not valid on this server")
    }

    /// Random text, every truncation of a good token and one character of it changed: always a refusal, never a
    /// crash. (A part's last character is left alone: some of its bits are padding, which decoders ignore.)
    func testRandomAndTruncatedTokensAreAlwaysRefused() async throws {
        let secret = "fuzz-secret-fuzz-secret-fuzz-secret"
        let verifier = SignedTokenVerifier(keys: [try await .secret(Array(secret.utf8))])
        let good = try Self.mint(header: ["alg": "HS256"], payload: payload, key: try await hmac(secret, .sha256))
        XCTAssertNoThrow(try verifier.verify(good, now: now))
        var random = SeededGenerator(seed: 21)
        var tokens = (0..<good.count).map { String(good.prefix($0)) }
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ {}\"\u{0}é")
        let bytes = Array(good.utf8)
        let changeable = bytes.indices.filter { $0 + 1 < bytes.count && bytes[$0 + 1] != UInt8(ascii: ".") }
        for _ in 0..<2_000 {
            let length = Int.random(in: 0...300, using: &random)
            tokens.append(String((0..<length).map { _ in alphabet.randomElement(using: &random)! }))
            var changed = bytes
            changed[changeable.randomElement(using: &random)!] = UInt8.random(in: 32...126, using: &random)
            if changed != bytes { tokens.append(String(decoding: changed, as: UTF8.self)) }
        }
        for token in tokens {
            XCTAssertNotNil(refusal { try verifier.verify(token, now: now) }, "accepted \(token)")
        }
    }
}
