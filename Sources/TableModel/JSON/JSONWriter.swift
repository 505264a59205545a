/// Writes compact JSON text straight into bytes, for the values the server encodes once per committed intent
/// (batches, updates, acks): building a ``JSONValue`` first costs a dictionary per object and a sort of its keys.
///
/// The writer places commas itself: a member or element written after a value gets one. Callers write members in
/// the order they want; the encoders in this package write them sorted, so their output equals ``JSONValue/jsonBytes``
/// of the same value.
///
/// The text is written through a pointer into memory the writer owns, which is why it cannot be copied: each write
/// first makes room for the most it can write (the room is counted, never assumed), then stores without the
/// uniqueness and capacity checks an array makes on every append. ``bytes`` copies the text out.
public struct JSONWriter: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private var count = 0
    /// A value was just completed: the next member or element needs a comma first.
    private var afterValue = false

    /// An empty writer with room for `capacity` bytes; it grows when a write needs more.
    public init(capacity: Int = 256) {
        self.capacity = max(capacity, 16)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// The text so far.
    public var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// Makes room for `needed` more bytes: every store below follows a call that covers it.
    @inline(__always)
    private mutating func reserve(_ needed: Int) {
        if capacity - count < needed { grow(needed) }
    }

    private mutating func grow(_ needed: Int) {
        let newCapacity = max(capacity * 2, count + needed)
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.initialize(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    /// Stores one byte; room was reserved.
    @inline(__always)
    private mutating func put(_ byte: UInt8) {
        base[count] = byte
        count &+= 1
    }

    /// Stores `source`; room was reserved.
    @inline(__always)
    private mutating func put(_ source: UnsafeBufferPointer<UInt8>) {
        guard let start = source.baseAddress else { return }
        let length = source.count
        let from = UnsafeRawPointer(start)
        let to = UnsafeMutableRawPointer(base + count)
        // Names and small strings: overlapping copies of the first and last bytes cost less than a loop (which
        // becomes a call to memmove) or memmove itself.
        switch length {
        case 0: break
        case 1..<4:
            let middle = length &>> 1
            to.storeBytes(of: start[0], as: UInt8.self)
            to.storeBytes(of: start[middle], toByteOffset: middle, as: UInt8.self)
            to.storeBytes(of: start[length &- 1], toByteOffset: length &- 1, as: UInt8.self)
        case 4..<8:
            to.storeBytes(of: from.loadUnaligned(as: UInt32.self), as: UInt32.self)
            to.storeBytes(
                of: from.loadUnaligned(fromByteOffset: length &- 4, as: UInt32.self), toByteOffset: length &- 4,
                as: UInt32.self)
        case 8...16:
            to.storeBytes(of: from.loadUnaligned(as: UInt64.self), as: UInt64.self)
            to.storeBytes(
                of: from.loadUnaligned(fromByteOffset: length &- 8, as: UInt64.self), toByteOffset: length &- 8,
                as: UInt64.self)
        default:
            (base + count).initialize(from: start, count: length)
        }
        count &+= length
    }

    /// Reserves `needed` bytes and one for the comma a value after a value needs, and writes that comma.
    @inline(__always)
    private mutating func separate(reserving needed: Int) {
        reserve(needed + 1)
        if afterValue { put(UInt8(ascii: ",")) }
    }

    /// Opens an object (as a value or element).
    @inline(__always)
    public mutating func beginObject() {
        separate(reserving: 1)
        put(UInt8(ascii: "{"))
        afterValue = false
    }

    /// Closes the innermost object.
    @inline(__always)
    public mutating func endObject() {
        reserve(1)
        put(UInt8(ascii: "}"))
        afterValue = true
    }

    /// Opens an array (as a value or element).
    public mutating func beginArray() {
        separate(reserving: 1)
        put(UInt8(ascii: "["))
        afterValue = false
    }

    /// Closes the innermost array.
    @inline(__always)
    public mutating func endArray() {
        reserve(1)
        put(UInt8(ascii: "]"))
        afterValue = true
    }

    /// Writes a member whose value is an array, `"name":[`, in one write (the empty lists of a batch are many);
    /// ``endArray()`` closes it.
    public mutating func beginArray(member name: StaticString) {
        key(name, then: UInt8(ascii: "["))
        afterValue = false
    }

    /// Opens an object and writes its first member's key, `{"name":`, in one write; its value comes next.
    @inline(__always)
    public mutating func beginObject(firstKey name: StaticString) {
        separate(reserving: name.utf8CodeUnitCount + 4)
        put(UInt8(ascii: "{"))
        afterValue = false
        key(name)
    }

    /// Writes a member's key; its value comes next. Keys are plain ASCII names, written without escaping.
    @inline(__always)
    public mutating func key(_ name: StaticString) {
        key(name, then: nil)
        afterValue = false
    }

    /// Writes `"name":` and `byte` after it if given.
    @inline(__always)
    private mutating func key(_ name: StaticString, then byte: UInt8?) {
        separate(reserving: name.utf8CodeUnitCount + 4)
        put(UInt8(ascii: "\""))
        put(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        put(UInt8(ascii: "\""))
        put(UInt8(ascii: ":"))
        if let byte { put(byte) }
    }

    /// Writes a string value.
    public mutating func string(_ value: String) {
        separate(reserving: 0)
        writeString(value)
        afterValue = true
    }

    /// Writes a string, or `null` for nil.
    public mutating func optionalString(_ value: String?) {
        if let value { string(value) } else { self.value(.null) }
    }

    /// Writes an integer value.
    public mutating func integer(_ value: some BinaryInteger) {
        separate(reserving: 20)
        writeInteger(Int64(value))
        afterValue = true
    }

    /// Writes `[first, second]`, an index path, as one array value.
    @inline(__always)
    public mutating func pair(_ first: Int, _ second: Int) {
        separate(reserving: 43)
        put(UInt8(ascii: "["))
        writeInteger(Int64(first))
        put(UInt8(ascii: ","))
        writeInteger(Int64(second))
        put(UInt8(ascii: "]"))
        afterValue = true
    }

    /// Writes a boolean value.
    public mutating func bool(_ value: Bool) {
        separate(reserving: 5)
        writeLiteral(value ? "true" : "false")
        afterValue = true
    }

    /// Writes the members of `object`, the compact text of a JSON object written earlier (`{…}`), as members of
    /// the object being written, so that text written once can be reused.
    public mutating func members(ofObject object: [UInt8]) {
        precondition(object.first == UInt8(ascii: "{") && object.last == UInt8(ascii: "}"), "not an object's text")
        guard object.count > 2 else { return }
        separate(reserving: object.count - 2)
        object.withUnsafeBufferPointer { put(UnsafeBufferPointer(rebasing: $0[1..<($0.count - 1)])) }
        afterValue = true
    }

    /// Writes any JSON value in its deterministic form (see ``JSONValue/jsonBytes``).
    public mutating func value(_ value: JSONValue) {
        separate(reserving: 0)
        write(value)
        afterValue = true
    }

    private mutating func writeLiteral(_ literal: StaticString) {
        reserve(literal.utf8CodeUnitCount)
        put(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    private mutating func write(_ value: JSONValue) {
        switch value {
        case .null: writeLiteral("null")
        case .bool(let value): writeLiteral(value ? "true" : "false")
        case .number(let value):
            if let integer = JSONValue.integral(value) {
                reserve(20)
                writeInteger(integer)
            } else {
                // Not finite is "null"; otherwise the shortest text that reads back the same, all ASCII.
                var text = JSONValue.numberText(value)
                text.withUTF8 { utf8 in
                    reserve(utf8.count)
                    put(utf8)
                }
            }
        case .string(let value): writeString(value)
        case .array(let elements):
            reserve(2)
            put(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 {
                    reserve(1)
                    put(UInt8(ascii: ","))
                }
                write(element)
            }
            reserve(1)
            put(UInt8(ascii: "]"))
        case .object(let members):
            reserve(1)
            put(UInt8(ascii: "{"))
            // Objects of one or two members (most row values) need no sorted copy; larger ones sort the members
            // themselves, not their keys, which saves looking each value up again.
            if members.count <= 2 {
                var pair = members.makeIterator()
                if let first = pair.next() {
                    if let second = pair.next() {
                        let ordered = JSONValue.utf8Precedes(first.key, second.key)
                        writeMember(ordered ? first : second, comma: false)
                        writeMember(ordered ? second : first, comma: true)
                    } else {
                        writeMember(first, comma: false)
                    }
                }
            } else {
                for (index, member) in members.sorted(by: { JSONValue.utf8Precedes($0.key, $1.key) }).enumerated() {
                    writeMember(member, comma: index > 0)
                }
            }
            reserve(1)
            put(UInt8(ascii: "}"))
        }
    }

    private mutating func writeMember(_ member: (key: String, value: JSONValue), comma: Bool) {
        if comma {
            reserve(1)
            put(UInt8(ascii: ","))
        }
        writeString(member.key)
        reserve(1)
        put(UInt8(ascii: ":"))
        write(member.value)
    }

    /// Writes `value` quoted and escaped: copied whole when no byte needs an escape (most strings), otherwise as it
    /// is up to the first byte that does, then byte by byte.
    private mutating func writeString(_ value: String) {
        // Native strings lend their bytes without a copy (a mutable copy of the string would cost a retain).
        if value.utf8.withContiguousStorageIfAvailable({ writeString(utf8: $0) }) == nil {
            var value = value
            value.withUTF8 { writeString(utf8: $0) }
        }
    }

    private mutating func writeString(utf8: UnsafeBufferPointer<UInt8>) {
        reserve(utf8.count + 2)
        put(UInt8(ascii: "\""))
        guard Self.needsEscaping(utf8) else {
            put(utf8)
            return put(UInt8(ascii: "\""))
        }
        var index = 0
        while index < utf8.count {
            let byte = utf8[index]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { break }
            base[count &+ index] = byte
            index &+= 1
        }
        count += index
        while index < utf8.count {
            // Each remaining byte takes at most six; the closing quote's room was reserved above.
            reserve(6 + 1)
            writeEscaped(utf8[index])
            index += 1
        }
        put(UInt8(ascii: "\""))
    }

    /// Whether any byte of `text` is a control byte, a quote or a backslash, tested eight bytes at a time (the last
    /// word overlaps the one before it; four to seven bytes are tested as two overlapping halves of one word).
    @inline(__always)
    private static func needsEscaping(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let start = text.baseAddress else { return false }
        let length = text.count
        let bytes = UnsafeRawPointer(start)
        if length >= 8 {
            var offset = 0
            while offset &+ 8 <= length {
                if flagsEscape(bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) { return true }
                offset &+= 8
            }
            return offset < length
                && flagsEscape(bytes.loadUnaligned(fromByteOffset: length &- 8, as: UInt64.self))
        }
        if length >= 4 {
            let low = UInt64(bytes.loadUnaligned(as: UInt32.self))
            let high = UInt64(bytes.loadUnaligned(fromByteOffset: length &- 4, as: UInt32.self))
            return flagsEscape(low | high << 32)
        }
        for byte in text where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            return true
        }
        return false
    }

    /// Whether one of the eight bytes of `word` is below 0x20, a quote or a backslash: the bit tricks that find a
    /// zero byte (`(x - 0x01…) & ~x & 0x80…`) answer "is any byte below n" exactly for n ≤ 0x80.
    @inline(__always)
    private static func flagsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quotes = word ^ (ones &* 0x22)
        let backslashes = word ^ (ones &* 0x5C)
        let control = (word &- ones &* 0x20) & ~word
        let quote = (quotes &- ones) & ~quotes
        let backslash = (backslashes &- ones) & ~backslashes
        return (control | quote | backslash) & (ones &* 0x80) != 0
    }

    private mutating func writeEscaped(_ byte: UInt8) {
        func pair(_ second: UInt8) {
            put(UInt8(ascii: "\\"))
            put(second)
        }
        switch byte {
        case UInt8(ascii: "\""): pair(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): pair(UInt8(ascii: "\\"))
        case 0x0A: pair(UInt8(ascii: "n"))
        case 0x0D: pair(UInt8(ascii: "r"))
        case 0x09: pair(UInt8(ascii: "t"))
        case 0x08: pair(UInt8(ascii: "b"))
        case 0x0C: pair(UInt8(ascii: "f"))
        case 0x00..<0x20:
            pair(UInt8(ascii: "u"))
            put(UInt8(ascii: "0"))
            put(UInt8(ascii: "0"))
            put(hexDigit(byte >> 4))
            put(hexDigit(byte & 0xF))
        default: put(byte)
        }
    }

    private func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    /// Writes the decimal digits of `value` (at most 20 bytes, reserved by the caller) from the last digit back.
    @inline(__always)
    private mutating func writeInteger(_ value: Int64) {
        var magnitude = value.magnitude
        if value < 0 { put(UInt8(ascii: "-")) }
        if magnitude < 10 { return put(UInt8(ascii: "0") + UInt8(magnitude)) }
        if magnitude < 100 {
            // Row and section numbers are mostly this size: no loop to count the digits.
            put(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude / 10))
            return put(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10))
        }
        var digits = 1
        var power: UInt64 = 10
        while digits < 20, magnitude >= power {
            digits += 1
            power = power &* 10
        }
        var index = count + digits
        count = index
        while magnitude > 0 {
            index -= 1
            base[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
        }
    }
}
