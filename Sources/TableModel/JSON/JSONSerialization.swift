extension JSONValue {
    /// The compact, deterministic JSON text of this value as UTF-8 bytes.
    ///
    /// Deterministic so that equal values always produce identical bytes (the store and the wire can compare and
    /// hash them): object keys are sorted by their UTF-8 bytes, no whitespace is emitted, integral numbers with a
    /// magnitude below 2^53 are printed without a fraction, other finite numbers use the shortest text that reads
    /// back as the same `Double`, and non-finite numbers (which JSON cannot express) are written as `null`.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter(capacity: 64)
        writer.value(self)
        return writer.bytes
    }

    /// The compact, deterministic JSON text of this value (see ``jsonBytes``).
    public var jsonText: String { String(decoding: jsonBytes, as: UTF8.self) }

    /// The number of bytes of ``jsonBytes``, computed without building them; used for the per-value size limit.
    public var encodedByteCount: Int {
        switch self {
        case .null: return 4
        case .bool(let value): return value ? 4 : 5
        case .number(let value): return JSONValue.numberText(value).utf8.count
        case .string(let value): return JSONValue.encodedByteCount(of: value)
        case .array(let elements):
            var count = 2 + max(elements.count - 1, 0)
            for element in elements { count += element.encodedByteCount }
            return count
        case .object(let members):
            var count = 2 + max(members.count - 1, 0)
            for (key, value) in members { count += JSONValue.encodedByteCount(of: key) + 1 + value.encodedByteCount }
            return count
        }
    }

    /// Whether `a`'s UTF-8 bytes sort before `b`'s: the order of object keys. Compared through buffer pointers,
    /// which the generic `utf8.lexicographicallyPrecedes` is many times slower than.
    static func utf8Precedes(_ a: String, _ b: String) -> Bool {
        // Native strings lend their bytes; only others are copied (a copy up front would cost a retain of each).
        if let precedes = a.utf8.withContiguousStorageIfAvailable({ a in
            b.utf8.withContiguousStorageIfAvailable { b in utf8Precedes(a, b) }
        }), let precedes {
            return precedes
        }
        var a = a
        var b = b
        return a.withUTF8 { a in b.withUTF8 { b in utf8Precedes(a, b) } }
    }

    private static func utf8Precedes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        for index in 0..<min(a.count, b.count) where a[index] != b[index] { return a[index] < b[index] }
        return a.count < b.count
    }

    /// Integral values print as integers so that `1` does not come back as `1.0`; 2^53 is where doubles stop
    /// representing every integer, so larger magnitudes keep Swift's shortest round-trip form (e.g. `1e+16`).
    static func numberText(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if let integer = integral(value) { return String(integer) }
        return value.description
    }

    /// `value` as an integer when it prints as one.
    static func integral(_ value: Double) -> Int64? {
        // Below 2^53 the conversion is exact for integers and truncates anything else, which then differs from the
        // value (NaN fails the first test); cheaper than rounding, which is a library call.
        guard abs(value) < 9_007_199_254_740_992 else { return nil }
        let integer = Int64(value)
        return Double(integer) == value ? integer : nil
    }

    static func encodedByteCount(of string: String) -> Int {
        var count = 2
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x0A, 0x0D, 0x09, 0x08, 0x0C: count += 2
            case 0x00..<0x20: count += 6
            default: count += 1
            }
        }
        return count
    }
}
