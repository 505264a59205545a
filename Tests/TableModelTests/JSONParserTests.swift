import TableModel
import TablecastTesting
import XCTest

final class JSONParserTests: XCTestCase {
    func testParsesEveryKindOfValue() throws {
        let value = try JSONValue(parsing: #" { "a" : [1, -2.5, 3e2, true, false, null], "b": {"c": "d"} } "#)
        XCTAssertEqual(value, ["a": [1, -2.5, 300, true, false, nil], "b": ["c": "d"]])
    }

    func testDecodesEscapesAndSurrogatePairs() throws {
        let value = try JSONValue(parsing: #""q\"b\\s\/\b\f\n\r\t\u00e9\ud83d\ude00 ünï""#)
        XCTAssertEqual(value, .string("q\"b\\s/\u{8}\u{c}\n\r\t\u{e9}😀 ünï"))
    }

    func testNumbersReadExactlyIncludingLongAndExponentForms() throws {
        XCTAssertEqual(try JSONValue(parsing: "9007199254740993"), .number(9_007_199_254_740_992))
        XCTAssertEqual(try JSONValue(parsing: "0.1"), .number(0.1))
        XCTAssertEqual(try JSONValue(parsing: "-0"), .number(-0.0))
        XCTAssertEqual(try JSONValue(parsing: "1E-2"), .number(0.01))
        XCTAssertEqual(try JSONValue(parsing: "123456789012345"), .number(123_456_789_012_345))
    }

    func testRejectsMalformedInputWithMessageAndOffset() {
        let cases: [(String, String, Int)] = [
            ("", "unexpected end of input, expected a value", 0),
            ("[1,]", "unexpected ']', expected a value", 3),
            ("[1 2]", "unexpected '2', expected ',' or ']' in an array", 3),
            ("{\"a\" 1}", "expected ':' after an object key", 5),
            ("{1:2}", "expected a string key in an object", 1),
            ("{\"a\":1,\"a\":2}", "duplicate object key \"a\"", 7),
            ("{\"a\":1", "unexpected end of input inside an object", 6),
            ("01", "leading zero in a number", 0),
            ("1.", "expected a digit after '.' in a number", 2),
            ("1e", "expected a digit in a number's exponent", 2),
            ("-", "expected a digit in a number", 1),
            ("+1", "unexpected '+', expected a value", 0),
            ("1e400", "number is out of the range of a double", 0),
            ("tru", "invalid literal, expected 'true'", 0),
            ("nul", "invalid literal, expected 'null'", 0),
            ("\"abc", "unterminated string", 0),
            ("\"a\u{1}\"", "raw control character 0x1 in a string", 2),
            (#""\x""#, "invalid escape sequence '\\x'", 1),
            (#""\u12G4""#, "invalid hex digit 'G' in a \\u escape", 5),
            (#""\ud800""#, "high surrogate without a following low surrogate", 1),
            (#""\udc00""#, "lone low surrogate", 1),
            ("1 2", "unexpected '2' after the top-level value", 2),
            ("[1] // c", "unexpected '/' after the top-level value", 4),
            ("NaN", "unexpected 'N', expected a value", 0),
        ]
        for (text, message, offset) in cases {
            XCTAssertThrowsError(try JSONValue(parsing: text), text) { error in
                XCTAssertEqual(error as? JSONParseError, JSONParseError(message: message, offset: offset), text)
            }
        }
    }

    func testRejectsInvalidUTF8AndLeadingByteOrderMark() {
        XCTAssertThrowsError(try JSONValue(parsing: [0x22, 0xC3, 0x28, 0x22])) { error in
            XCTAssertEqual(error as? JSONParseError, JSONParseError(message: "string is not valid UTF-8", offset: 0))
        }
        XCTAssertThrowsError(try JSONValue(parsing: [0xEF, 0xBB, 0xBF, 0x31])) { error in
            XCTAssertEqual((error as? JSONParseError)?.offset, 0)
        }
    }

    func testNestingBeyondTheDepthLimitIsRejectedWithoutRecursingFurther() {
        let deep = String(repeating: "[", count: 100_000)
        XCTAssertThrowsError(try JSONValue(parsing: deep)) { error in
            XCTAssertEqual(
                error as? JSONParseError, JSONParseError(message: "nesting deeper than 128 levels", offset: 128))
        }
        let allowed = String(repeating: "[", count: 128) + String(repeating: "]", count: 128)
        XCTAssertNoThrow(try JSONValue(parsing: allowed))
    }

    func testRandomBytesAreRejectedOrReadBackIdentically() {
        withSeed { generator in
            let alphabet = Array(#"{}[]":,-+.eE0123456789 tfnrulsa\"#.utf8) + [0x00, 0x0A, 0x80, 0xC3, 0xA9, 0xFF]
            for _ in 0..<20_000 {
                let bytes = (0..<Int.random(in: 0...12, using: &generator)).map { _ in
                    alphabet.randomElement(using: &generator)!
                }
                if let value = try? JSONValue(parsing: bytes) {
                    XCTAssertEqual(try JSONValue(parsing: value.jsonBytes), value, "\(bytes)")
                }
            }
        }
    }

    func testTruncatedAndMutatedDocumentsNeverCrash() throws {
        let document = Array(#"{"a":[1,-2.5e3,"x\u00e9\n",{"b":null,"c":[true,false]}],"d":"\ud83d\ude00"}"#.utf8)
        XCTAssertNoThrow(try JSONValue(parsing: document))
        for length in 0..<document.count {
            XCTAssertThrowsError(try JSONValue(parsing: Array(document[..<length])))
        }
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<2_000 {
            var mutated = document
            mutated[Int.random(in: 0..<mutated.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            if let value = try? JSONValue(parsing: mutated) {
                XCTAssertEqual(try JSONValue(parsing: value.jsonBytes), value)
            }
        }
    }
}
