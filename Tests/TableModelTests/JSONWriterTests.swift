import TableModel
import TablecastTesting
import XCTest

final class JSONWriterTests: XCTestCase {
    func testCommasAndNesting() {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("a")
        writer.beginArray()
        writer.integer(1)
        writer.beginObject()
        writer.endObject()
        writer.beginArray()
        writer.endArray()
        writer.string("x\"y")
        writer.endArray()
        writer.key("b")
        writer.optionalString(nil)
        writer.key("c")
        writer.bool(false)
        writer.key("d")
        writer.value(["k": [1.5, "é"]])
        writer.endObject()
        XCTAssertEqual(
            String(decoding: writer.bytes, as: UTF8.self),
            #"{"a":[1,{},[],"x\"y"],"b":null,"c":false,"d":{"k":[1.5,"é"]}}"#)
    }

    func testArrayMembersAndFirstKeysInOneWrite() {
        var writer = JSONWriter(capacity: 1)
        writer.beginObject(firstKey: "a")
        writer.beginObject(firstKey: "b")
        writer.integer(1)
        writer.endObject()
        writer.beginArray(member: "c")
        writer.endArray()
        writer.beginArray(member: "d")
        writer.beginObject(firstKey: "e")
        writer.pair(2, -3)
        writer.endObject()
        writer.beginObject(firstKey: "f")
        writer.bool(true)
        writer.endObject()
        writer.endArray()
        writer.endObject()
        XCTAssertEqual(
            String(decoding: writer.bytes, as: UTF8.self), #"{"a":{"b":1},"c":[],"d":[{"e":[2,-3]},{"f":true}]}"#)
    }

    func testMembersOfAnObjectWrittenEarlier() {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("a")
        writer.integer(1)
        writer.members(ofObject: Array(#"{}"#.utf8))
        writer.members(ofObject: JSONValue.object(["b": [true], "c": ["d": nil]]).jsonBytes)
        writer.endObject()
        XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self), #"{"a":1,"b":[true],"c":{"d":null}}"#)
        var first = JSONWriter()
        first.beginObject()
        first.members(ofObject: Array(#"{"x":"y"}"#.utf8))
        first.key("z")
        first.bool(true)
        first.endObject()
        XCTAssertEqual(String(decoding: first.bytes, as: UTF8.self), #"{"x":"y","z":true}"#)
    }

    func testIntegersAtTheEdges() {
        for value: Int64 in [0, 7, 9, 10, 42, 99, 100, -1, -10, -99, -100, 1_234_567_890, .max, .min + 1, .min] {
            var writer = JSONWriter()
            writer.integer(value)
            XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self), String(value))
        }
        var writer = JSONWriter()
        writer.integer(UInt64(Int64.max))
        XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self), String(Int64.max))
    }

    /// The direct batch writer is an optimization of `json.jsonBytes`: the bytes must be identical.
    func testBatchBytesEqualTheValuesText() {
        withSeed { generator in
            for _ in 0..<300 {
                let table = RandomTables.table(using: &generator)
                let batch = RandomTables.validBatch(for: table, using: &generator)
                XCTAssertEqual(batch.jsonBytes, batch.json.jsonBytes, batch.json.jsonText)
            }
        }
        let flags = Batch(
            insertSections: [
                .init(
                    at: 0,
                    section: Section(
                        id: "s1", header: "H\n", footer: nil,
                        rows: [Row(id: "r1", value: nil, editable: false, movable: false)]))
            ],
            reloadSections: [.init(at: 1, header: nil, footer: "f")],
            reloadRows: [.init(at: RowPath(section: 1, row: 0), value: [1, 2], editable: true, movable: false)])
        XCTAssertEqual(flags.jsonBytes, flags.json.jsonBytes, flags.json.jsonText)
    }
}

/// The writer stores through a pointer into memory it grows itself; these hold its text to that of the array-based
/// serializer it replaced (kept here as the reference), across growth, escapes and every kind of value.
final class JSONWriterReferenceTests: XCTestCase {
    func testValuesEqualTheReferenceText() {
        withSeed { generator in
            for _ in 0..<2_000 {
                var value = randomJSON(depth: 4, using: &generator)
                if Bool.random(using: &generator) {
                    // Long strings take the bulk copy; repeated escapes grow the buffer byte by byte.
                    let long = String(repeating: "abcdefgh", count: Int.random(in: 1...300, using: &generator))
                    value = .array([value, .string(long), .string(long + "\"\n" + long), [long: value]])
                }
                // Every byte that needs an escape, and some that do not, among plain text.
                let escapes = (0..<Int.random(in: 0...20, using: &generator)).map { _ in
                    Bool.random(using: &generator)
                        ? String(UnicodeScalar(UInt8.random(in: 0..<0x20, using: &generator)))
                        : ["\"", "\\", "é", "😀", "\u{7f}", "abc"].randomElement(using: &generator)!
                }
                value = .array([value, .string(escapes.joined())])
                var expected: [UInt8] = []
                ReferenceSerializer.write(value, to: &expected)
                XCTAssertEqual(value.jsonBytes, expected, value.jsonText)
                // From the smallest buffer, with a string of escapes only (six bytes each) after the value.
                let controls = String(repeating: "\u{1}", count: Int.random(in: 0...40, using: &generator))
                var writer = JSONWriter(capacity: 1)
                writer.beginArray()
                writer.value(value)
                writer.string(controls)
                writer.endArray()
                var array: [UInt8] = []
                ReferenceSerializer.write(.array([value, .string(controls)]), to: &array)
                XCTAssertEqual(writer.bytes, array)
            }
        }
    }

    /// Strings are tested for escapes a word at a time, and copied in overlapping pieces by length: every byte
    /// that needs an escape, and its neighbours that do not, at every position of every length up to 40.
    func testEscapesAtEveryPositionAndLength() {
        let plain = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN".utf8)
        let probes: [UInt8] = Array(0..<0x20) + [0x22, 0x5C] + [0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7E, 0x7F]
        for length in 0...plain.count {
            var writer = JSONWriter(capacity: 1)
            writer.string(String(decoding: plain[0..<length], as: UTF8.self))
            XCTAssertEqual(writer.bytes, [0x22] + plain[0..<length] + [0x22])
            for position in 0..<length {
                for probe in probes {
                    var bytes = Array(plain[0..<length])
                    bytes[position] = probe
                    let text = String(decoding: bytes, as: UTF8.self)
                    var writer = JSONWriter(capacity: 1)
                    writer.string(text)
                    var expected: [UInt8] = []
                    ReferenceSerializer.write(.string(text), to: &expected)
                    XCTAssertEqual(writer.bytes, expected, "byte \(probe) at \(position) of \(length)")
                }
            }
        }
        // Bytes of multi-byte characters (0x80 and above) never need an escape, in any position of a word.
        for prefix in 0..<9 {
            let text = String(repeating: "a", count: prefix) + "é😀\u{7FF}"
            var writer = JSONWriter()
            writer.string(text)
            XCTAssertEqual(writer.bytes, [0x22] + Array(text.utf8) + [0x22])
        }
    }

    func testNumbersEqualTheReferenceText() {
        let numbers: [Double] = [
            0, -0.0, 1, -1, 9, 10, 99, 100, 12_345, -9_007_199_254_740_991, 9_007_199_254_740_991,
            9_007_199_254_740_992, -9_007_199_254_740_992, 1e16, 0.5, -2.25, 1e-7, 1e300, .infinity, -.infinity, .nan,
            .leastNonzeroMagnitude, .greatestFiniteMagnitude, 4_503_599_627_370_495.5,
        ]
        for number in numbers {
            var expected: [UInt8] = []
            ReferenceSerializer.write(.number(number), to: &expected)
            XCTAssertEqual(JSONValue.number(number).jsonText, String(decoding: expected, as: UTF8.self), "\(number)")
        }
    }
}

/// The serializer before the pointer-based writer, as it was: the reference for the bytes.
private enum ReferenceSerializer {
    static func write(_ value: JSONValue, to output: inout [UInt8]) {
        switch value {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let value):
            if value.rounded(.towardZero) == value && abs(value) < 9_007_199_254_740_992 {
                output.append(contentsOf: String(Int64(value)).utf8)
            } else {
                output.append(contentsOf: (value.isFinite ? value.description : "null").utf8)
            }
        case .string(let value): writeString(value, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                write(element, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            let sorted = members.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
            for (index, member) in sorted.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                writeString(member.key, to: &output)
                output.append(UInt8(ascii: ":"))
                write(member.value, to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    static func writeString(_ string: String, to output: inout [UInt8]) {
        let hexDigits = Array("0123456789abcdef".utf8)
        output.append(UInt8(ascii: "\""))
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
}
