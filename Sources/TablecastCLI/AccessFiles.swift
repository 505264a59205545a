import Foundation
import TablecastServer

/// The files `serve` makes its access policy of: the tokens file and the signed tokens' keys, read at start-up and
/// again on SIGHUP.
struct AccessFiles: Sendable {
    /// `--tokens`.
    var tokens: String?
    /// `--jwt-secret-file`: an HMAC secret of at least 32 bytes, less one trailing newline.
    var secretFile: String?
    /// `--jwt-public-key`, each a PEM public key.
    var publicKeyFiles: [String] = []
    /// `--jwt-issuer`, `--jwt-audience`.
    var issuer: String?
    var audience: String?
    /// `--jwt-revoked-file`: `jti` and `sub` values, one a line (`#` starts a comment), whose tokens are refused.
    var revokedFile: String?

    /// Whether signed tokens are accepted.
    var signedTokens: Bool { secretFile != nil || !publicKeyFiles.isEmpty }

    /// Whether any file is given: only then does SIGHUP read them again.
    var configured: Bool { tokens != nil || signedTokens }

    /// The files that hold secrets, by flag, for the warning about files every user can read.
    var secretFiles: [(flag: String, path: String)] {
        [("--tokens", tokens), ("--jwt-secret-file", secretFile)].compactMap { flag, path in path.map { (flag, $0) } }
    }

    /// The policy these files make: ``AccessPolicy/open`` when none is given.
    func load() async throws -> AccessPolicy {
        let grants = try tokens.map(TokensFile.load)
        guard signedTokens else { return grants.map { AccessPolicy(grants: $0) } ?? .open }
        var keys: [SignedTokenVerifier.Key] = []
        if let secretFile {
            var secret = try readFile(secretFile, what: "--jwt-secret-file")
            if secret.last == UInt8(ascii: "\n") { secret.removeLast() }
            if secret.last == UInt8(ascii: "\r") { secret.removeLast() }
            do {
                keys.append(try await .secret(secret))
            } catch {
                throw TokensFile.Problem(description: "--jwt-secret-file \(secretFile): \(error)")
            }
        }
        for path in publicKeyFiles {
            let pem = String(decoding: try readFile(path, what: "--jwt-public-key"), as: UTF8.self)
            do {
                keys.append(try await .publicKey(pem: pem))
            } catch {
                throw TokensFile.Problem(description: "--jwt-public-key \(path): \(error)")
            }
        }
        return AccessPolicy(
            grants: grants, verifier: SignedTokenVerifier(keys: keys, issuer: issuer, audience: audience),
            revoked: try revokedFile.map(Self.revoked) ?? [])
    }

    /// The values a revocation file lists: one a line, surrounding whitespace and `#` comments left out.
    static func revoked(_ path: String) throws -> Set<String> {
        let text = String(decoding: try readFile(path, what: "--jwt-revoked-file"), as: UTF8.self)
        return Set(
            text.split(whereSeparator: \.isNewline).map { line in
                line.prefix { $0 != "#" }.trimmingCharacters(in: .whitespaces)
            }.filter { !$0.isEmpty })
    }
}
