import CLibCrypto

/// SHA-256 through OpenSSL's libcrypto, for naming a token's principal in the store without storing the token.
enum TokenDigest {
    /// The SHA-256 digest of `bytes` as 64 lowercase hex digits.
    static func sha256Hex(_ bytes: some Collection<UInt8>) -> String {
        let message = Array(bytes)
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        _ = message.withUnsafeBufferPointer { SHA256($0.baseAddress, $0.count, &digest) }
        let hexDigits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(digest.count * 2)
        for byte in digest {
            text.append(hexDigits[Int(byte >> 4)])
            text.append(hexDigits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
