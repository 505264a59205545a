/// Writes compact JSON text straight into bytes, for the values the server encodes once per committed intent
/// (batches, updates, acks): building a ``JSONValue`` first costs a dictionary per object and a sort of its keys.
///
/// The writer places commas itself: a member or element written after a value gets one. Callers write members in
/// the order they want; the encoders in this package write them sorted, so their output equals ``JSONValue/jsonBytes``
/// of the same value.
public struct JSONWriter: Sendable {
    /// The text so far.
    public private(set) var bytes: [UInt8] = []
    /// A value was just completed: the next member or element needs a comma first.
    private var afterValue = false

    /// An empty writer with room for `capacity` bytes.
    public init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    private mutating func separate() {
        if afterValue { bytes.append(UInt8(ascii: ",")) }
    }

    /// Opens an object (as a value or element).
    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        afterValue = false
    }

    /// Closes the innermost object.
    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        afterValue = true
    }

    /// Opens an array (as a value or element).
    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        afterValue = false
    }

    /// Closes the innermost array.
    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        afterValue = true
    }

    /// Writes a member's key; its value comes next. Keys are plain ASCII names, written without escaping.
    public mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        // Names are a few bytes: appending them one by one costs less than the general append of a buffer.
        for byte in UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount) { bytes.append(byte) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        afterValue = false
    }

    /// Writes a string value.
    public mutating func string(_ value: String) {
        separate()
        JSONValue.writeString(value, to: &bytes)
        afterValue = true
    }

    /// Writes a string, or `null` for nil.
    public mutating func optionalString(_ value: String?) {
        if let value { string(value) } else { self.value(.null) }
    }

    /// Writes an integer value.
    public mutating func integer(_ value: some BinaryInteger) {
        separate()
        JSONValue.writeInteger(Int64(value), to: &bytes)
        afterValue = true
    }

    /// Writes a boolean value.
    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
        afterValue = true
    }

    /// Writes the members of `object`, the compact text of a JSON object written earlier (`{…}`), as members of
    /// the object being written, so that text written once can be reused.
    public mutating func members(ofObject object: [UInt8]) {
        precondition(object.first == UInt8(ascii: "{") && object.last == UInt8(ascii: "}"), "not an object's text")
        guard object.count > 2 else { return }
        separate()
        bytes.append(contentsOf: object[1..<(object.count - 1)])
        afterValue = true
    }

    /// Writes any JSON value in its deterministic form.
    public mutating func value(_ value: JSONValue) {
        separate()
        value.write(to: &bytes)
        afterValue = true
    }
}

extension JSONValue {
    /// Appends the decimal digits of `value` without creating a String.
    static func writeInteger(_ value: Int64, to output: inout [UInt8]) {
        if value < 0 { output.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        guard magnitude >= 10 else { return output.append(UInt8(ascii: "0") + UInt8(magnitude)) }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0) // 24 bytes of scratch: enough for 20 digits
        withUnsafeMutableBytes(of: &digits) { scratch in
            var index = scratch.count
            while magnitude > 0 {
                index -= 1
                scratch[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            }
            output.append(contentsOf: scratch[index...])
        }
    }
}
