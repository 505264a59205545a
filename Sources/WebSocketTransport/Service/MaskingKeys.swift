import Glibc

/// Masking keys for a client's frames (RFC 6455 §5.3: a new key per frame, which the server cannot predict), drawn
/// from a buffer of random bytes that is refilled 256 keys at a time: a system call per key (as
/// `SystemRandomNumberGenerator` and lws make) cost more than writing a small frame.
struct MaskingKeys {
    private var keys = [UInt32](repeating: 0, count: 256)
    private var next = 256

    /// The next key.
    mutating func take() -> UInt32 {
        if next == keys.count {
            // glibc's `arc4random_buf`: the kernel's CSPRNG (getrandom) for the whole buffer.
            keys.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
            next = 0
        }
        defer { next += 1 }
        return keys[next]
    }

    /// Masks `count` bytes at `payload` in place with `key`, as stored in the frame before them: byte i is XORed
    /// with byte i mod 4 of the key, eight bytes at a time.
    static func mask(_ payload: UnsafeMutableRawPointer, count: Int, with key: UInt32) {
        let word = UInt64(key) | UInt64(key) << 32
        var offset = 0
        while offset + 8 <= count {
            let masked = payload.loadUnaligned(fromByteOffset: offset, as: UInt64.self) ^ word
            payload.storeBytes(of: masked, toByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        withUnsafeBytes(of: key) { key in
            while offset < count {
                let byte = payload.load(fromByteOffset: offset, as: UInt8.self) ^ key[offset & 3]
                payload.storeBytes(of: byte, toByteOffset: offset, as: UInt8.self)
                offset += 1
            }
        }
    }
}
