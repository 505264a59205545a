extension JSONValue {
    /// The compact, deterministic JSON text of this value as UTF-8 bytes.
    ///
    /// Deterministic so that equal values always produce identical bytes (the store and the wire can compare and
    /// hash them): object keys are sorted by their UTF-8 bytes, no whitespace is emitted, integral numbers with a
    /// magnitude below 2^53 are printed without a fraction, other finite numbers use the shortest text that reads
    /// back as the same `Double`, and non-finite numbers (which JSON cannot express) are written as `null`.
    public var jsonBytes: [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(64)
        write(to: &output)
        return output
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

    /// Appends the JSON text of this value to `output`.
    public func write(to output: inout [UInt8]) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let value):
            if let integer = JSONValue.integral(value) {
                JSONValue.writeInteger(integer, to: &output)
            } else {
                output.append(contentsOf: JSONValue.numberText(value).utf8)
            }
        case .string(let value): JSONValue.writeString(value, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                element.write(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            func write(_ member: (key: String, value: JSONValue)) {
                JSONValue.writeString(member.key, to: &output)
                output.append(UInt8(ascii: ":"))
                member.value.write(to: &output)
            }
            // Objects of one or two members (most row values) need no sorted copy; larger ones sort the members
            // themselves, not their keys, which saves looking each value up again.
            if members.count <= 2 {
                var pair = members.makeIterator()
                if let first = pair.next() {
                    if let second = pair.next() {
                        let ordered = JSONValue.utf8Precedes(first.key, second.key)
                        write(ordered ? first : second)
                        output.append(UInt8(ascii: ","))
                        write(ordered ? second : first)
                    } else {
                        write(first)
                    }
                }
            } else {
                for (index, member) in members.sorted(by: { JSONValue.utf8Precedes($0.key, $1.key) }).enumerated() {
                    if index > 0 { output.append(UInt8(ascii: ",")) }
                    write(member)
                }
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// Whether `a`'s UTF-8 bytes sort before `b`'s: the order of object keys. Compared through buffer pointers,
    /// which the generic `utf8.lexicographicallyPrecedes` is many times slower than.
    static func utf8Precedes(_ a: String, _ b: String) -> Bool {
        var a = a
        var b = b
        return a.withUTF8 { a in
            b.withUTF8 { b in
                for index in 0..<min(a.count, b.count) where a[index] != b[index] { return a[index] < b[index] }
                return a.count < b.count
            }
        }
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
        value.rounded(.towardZero) == value && abs(value) < 9_007_199_254_740_992 ? Int64(value) : nil
    }

    static func writeString(_ string: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        // Most strings need no escaping: copy them whole.
        var string = string
        let plain = string.withUTF8 { utf8 in
            guard !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                return false
            }
            output.append(contentsOf: utf8)
            return true
        }
        if plain { return output.append(UInt8(ascii: "\"")) }
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x08: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x00..<0x20:
                output.append(contentsOf: "\\u00".utf8)
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0xF)])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
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

private let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
