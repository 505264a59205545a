import TableModel
import TablecastTesting
import XCTest

final class JSONSerializationTests: XCTestCase {
    func testOutputIsCompactWithSortedKeys() {
        let value: JSONValue = ["b": [1, 2.5, nil], "a": ["z": true, "y": false], "": "empty"]
        XCTAssertEqual(value.jsonText, #"{"":"empty","a":{"y":false,"z":true},"b":[1,2.5,null]}"#)
    }

    func testObjectMembersAreWrittenInUTF8ByteOrderWhateverTheirCount() {
        // One- and two-member objects are ordered without sorting; the order must be the same bytewise one.
        let keys = ["", "a", "ab", "b", "Z", "é", "e\u{301}", "\u{FB01}", "😀", "aé", "a\u{0}"]
        withSeed { generator in
            for _ in 0..<1_000 {
                let chosen = keys.shuffled(using: &generator).prefix(Int.random(in: 0...4, using: &generator))
                let members = Dictionary(chosen.map { ($0, JSONValue.string($0)) }, uniquingKeysWith: { a, _ in a })
                let expected = members.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
                    .map { JSONValue.string($0.key).jsonText + ":" + $0.value.jsonText }
                XCTAssertEqual(JSONValue.object(members).jsonText, "{" + expected.joined(separator: ",") + "}")
            }
        }
    }

    func testNumbersPrintIntegralValuesWithoutFraction() {
        XCTAssertEqual(JSONValue.number(3).jsonText, "3")
        XCTAssertEqual(JSONValue.number(-0.0).jsonText, "0")
        XCTAssertEqual(JSONValue.number(9_007_199_254_740_991).jsonText, "9007199254740991")
        XCTAssertEqual(JSONValue.number(9_007_199_254_740_992).jsonText, "9007199254740992.0")
        XCTAssertEqual(JSONValue.number(0.1).jsonText, "0.1")
        XCTAssertEqual(JSONValue.number(1e-7).jsonText, "1e-07")
        XCTAssertEqual(JSONValue.number(.infinity).jsonText, "null")
        XCTAssertEqual(JSONValue.number(.nan).jsonText, "null")
    }

    func testStringsEscapeQuotesBackslashesAndControlCharacters() {
        XCTAssertEqual(
            JSONValue.string("a\"b\\c\n\r\t\u{8}\u{c}\u{1}\u{1f}é😀").jsonText, #""a\"b\\c\n\r\t\b\f\u0001\u001fé😀""#)
    }

    func testEncodedByteCountMatchesTheSerializedLength() {
        let values: [JSONValue] = [
            nil, true, false, 0, -12.5, 1e300, "", "a\"\u{1}é", [], [:], [1, [2, ["x": nil]]],
            ["k\n": "v", "long": .string(String(repeating: "é", count: 100))],
        ]
        for value in values { XCTAssertEqual(value.encodedByteCount, value.jsonBytes.count, value.jsonText) }
    }

    func testRandomValuesRoundTripThroughTextExactly() {
        withSeed { generator in
            for _ in 0..<500 {
                let value = randomJSON(depth: 4, using: &generator)
                let bytes = value.jsonBytes
                XCTAssertEqual(try JSONValue(parsing: bytes), value, value.jsonText)
                XCTAssertEqual(try JSONValue(parsing: bytes).jsonBytes, bytes)
                XCTAssertEqual(value.encodedByteCount, bytes.count)
            }
        }
    }
}

/// A random JSON value with strings that exercise escapes and multi-byte characters.
func randomJSON(depth: Int, using generator: inout SeededGenerator) -> JSONValue {
    let pieces = ["a", "Z", "\"", "\\", "\n", "\u{0}", "\u{1f}", "é", "😀", " ", "/", "\u{7f}"]
    func randomString() -> String {
        (0..<Int.random(in: 0...6, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
    }
    switch Int.random(in: 0..<(depth > 0 ? 7 : 5), using: &generator) {
    case 0: return .null
    case 1: return .bool(Bool.random(using: &generator))
    case 2: return .number(Double(Int.random(in: -1_000_000...1_000_000, using: &generator)))
    case 3:
        return .number(
            Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &generator)).isFinite
                ? Double.random(in: -1e300...1e300, using: &generator) : 0.5)
    case 4: return .string(randomString())
    case 5:
        return .array(
            (0..<Int.random(in: 0...4, using: &generator)).map { _ in randomJSON(depth: depth - 1, using: &generator) })
    default:
        var members: [String: JSONValue] = [:]
        for _ in 0..<Int.random(in: 0...4, using: &generator) {
            members[randomString()] = randomJSON(depth: depth - 1, using: &generator)
        }
        return .object(members)
    }
}
