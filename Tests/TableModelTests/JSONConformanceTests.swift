import TableModel
import XCTest

/// The parser against the categories of the public JSONTestSuite (nst/JSONTestSuite, "Parsing JSON is a
/// Minefield"): documents every parser must accept (its `y_` cases), must reject (`n_`), and may do either with but
/// must not crash on (`i_`), for arrays, numbers, objects, strings, literals and document structure. The cases are
/// written here, per category, rather than copied from the suite.
final class JSONConformanceTests: XCTestCase {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Text of code points (Swift refuses noncharacters such as U+FDD0 in string literals).
    private func scalars(_ values: UInt32...) -> String {
        String(String.UnicodeScalarView(values.map { Unicode.Scalar($0)! }))
    }

    private func accepts(_ cases: [String], file: StaticString = #filePath, line: UInt = #line) {
        for text in cases {
            XCTAssertNoThrow(
                try JSONValue(parsing: bytes(text)), "must accept \(text.debugDescription)", file: file, line: line)
        }
    }

    private func rejects(_ cases: [[UInt8]], file: StaticString = #filePath, line: UInt = #line) {
        for input in cases {
            XCTAssertThrowsError(
                try JSONValue(parsing: input),
                "must reject \(String(decoding: input, as: UTF8.self).debugDescription) \(input)",
                file: file, line: line)
        }
    }

    private func rejects(_ cases: [String], file: StaticString = #filePath, line: UInt = #line) {
        rejects(cases.map(bytes), file: file, line: line)
    }

    // MARK: - Accepted (y_)

    func testAcceptsArrays() throws {
        accepts([
            "[]", "[\"\"]", "[null]", "[false]", "[1\n]", " [1]", "[2] ", "[[]   ]", "[1,null,null,null,2]",
            "[1, \"a\", true, {}, [], -1.5]", "[\n\t\r 1 \n\t\r]",
        ])
        XCTAssertEqual(try JSONValue(parsing: "[1,null,[\"\"]]"), [1, nil, [""]])
    }

    func testAcceptsNumbersInEveryGrammaticalForm() throws {
        let cases: [(String, Double)] = [
            ("0", 0), ("-0", -0.0), ("123", 123), ("-123", -123), ("-1", -1), ("20e1", 200), ("0e1", 0), ("0e+1", 0),
            ("1E22", 1e22), ("1E-2", 0.01), ("1E+2", 100), ("1e-2", 0.01), ("1e+2", 100), ("123e45", 123e45),
            ("123.456e78", 123.456e78), ("123.456789", 123.456789), ("-0.5", -0.5), ("123e65", 123e65),
            ("-0.00000000000000000000000000000000000000000000000000000000000000000000000000001", -1e-77),
            ("1.0e+28", 1e28), ("-1.0e+28", -1e28),
        ]
        for (text, value) in cases {
            XCTAssertEqual(try JSONValue(parsing: "[\(text)]"), [.number(value)], text)
            XCTAssertEqual(try JSONValue(parsing: text), .number(value), text)
        }
    }

    func testAcceptsObjects() throws {
        accepts([
            "{}", "{\"\":0}", "{\"a\":\"b\"}", "{\"asd\":\"sdf\", \"dfg\":\"fgh\"}", "{\n\"a\": \"b\"\n}",
            "{ \"min\": -1.0e+28, \"max\": 1.0e+28 }", "{\"a\":[],\"b\":{},\"c\":{\"d\":[{}]}}",
            "{\"x\":[{\"id\": \"" + String(repeating: "x", count: 10_000) + "\"}], \"id\": \"y\"}",
        ])
        XCTAssertEqual(try JSONValue(parsing: #"{"foo\u0000bar": 42}"#), ["foo\u{0}bar": 42])
        XCTAssertEqual(try JSONValue(parsing: #"{"title":"\u041f\u043e\u043b\u0442"}"#), ["title": "Полт"])
    }

    /// JSONTestSuite accepts `{"a":"b","a":"c"}` (RFC 8259 §4: names SHOULD be unique; receivers differ on which
    /// member wins). Tablecast deliberately rejects it: a message with two `type`s or two `at`s could mean one thing
    /// to the server and another to a schema validator or a proxy in front of it.
    func testRejectsDuplicateKeysDeliberately() {
        rejects([#"{"a":"b","a":"c"}"#, #"{"a":"b","a":"b"}"#, #"{"a":1,"b":{"a":1},"a":2}"#])
        XCTAssertNoThrow(try JSONValue(parsing: #"{"a":{"a":1},"b":{"a":1}}"#)) // the same key in two objects
    }

    func testAcceptsStringsWithEveryEscapeAndAnyUnicode() throws {
        let cases: [(String, String)] = [
            (#"["\u0060\u012a\u12AB"]"#, "\u{60}\u{12a}\u{12ab}"),
            (#"["\uD801\udc37"]"#, "\u{10437}"),
            (#"["\ud83d\ude39\ud83d\udc8d"]"#, "\u{1F639}\u{1F48D}"),
            (#"["\"\\\/\b\f\n\r\t"]"#, "\"\\/\u{8}\u{c}\n\r\t"),
            (#"["\\u0000"]"#, "\\u0000"),
            (#"["\""]"#, "\""),
            (#"["a/*b*/c/*d//e"]"#, "a/*b*/c/*d//e"),
            (#"["\\a"]"#, "\\a"),
            (#"["\\n"]"#, "\\n"),
            (#"["\u0012"]"#, "\u{12}"),
            (#"["\uFFFF"]"#, scalars(0xFFFF)),
            (#"["\uDBFF\uDFFF"]"#, scalars(0x10FFFF)),
            (#"["new\u00A0line"]"#, "new\u{A0}line"),
            (#"["\u0000"]"#, "\u{0}"),
            (#"["\uD834\uDD1E"]"#, "𝄞"),
            (#"["\u0061\u30af\u30EA\u30b9"]"#, "aクリス"),
            (#"["new\u000Aline"]"#, "new\nline"),
            (#"["\uA66D"]"#, "\u{A66D}"),
            (#"["\u005C"]"#, "\\"),
            (#"["\u2064"]"#, "\u{2064}"),
            (#"["\uFDD0"]"#, scalars(0xFDD0)),
            (#"["\uFFFE"]"#, scalars(0xFFFE)),
            (#"["\u0022"]"#, "\""),
            (#"["\u200B"]"#, "\u{200B}"),
            (#"["\u2028\u2029"]"#, "\u{2028}\u{2029}"),
            // Raw (unescaped) UTF-8 of one to four bytes, noncharacters, reserved code points, separators and DEL.
            ("[\"π €𝄞\"]", "π €𝄞"),
            (
                "[\"" + scalars(0x10FFFF, 0xFFFF, 0x1BFFF, 0x10FFFE, 0x1FFFE) + "\"]",
                scalars(0x10FFFF, 0xFFFF, 0x1BFFF, 0x10FFFE, 0x1FFFE)
            ),
            ("[\"\u{2028}\u{2029}\"]", "\u{2028}\u{2029}"),
            ("[\"a\u{7F}a\"]", "a\u{7F}a"),
            ("[ \"asd\"]", "asd"),
            ("[\" \"]", " "),
        ]
        for (text, value) in cases {
            XCTAssertEqual(try JSONValue(parsing: text), [.string(value)], text)
        }
    }

    func testAcceptsAnyValueAsTheWholeDocument() throws {
        XCTAssertEqual(try JSONValue(parsing: "false"), false)
        XCTAssertEqual(try JSONValue(parsing: "true"), true)
        XCTAssertEqual(try JSONValue(parsing: "null"), nil)
        XCTAssertEqual(try JSONValue(parsing: "42"), 42)
        XCTAssertEqual(try JSONValue(parsing: "-0.1"), -0.1)
        XCTAssertEqual(try JSONValue(parsing: "\"asd\""), "asd")
        XCTAssertEqual(try JSONValue(parsing: "\"\""), "")
        XCTAssertEqual(try JSONValue(parsing: "[\"a\"]\n"), ["a"])
        XCTAssertEqual(try JSONValue(parsing: " [] "), [])
        XCTAssertEqual(try JSONValue(parsing: "[true]"), [true])
    }

    // MARK: - Rejected (n_)

    func testRejectsMalformedArrays() {
        rejects([
            "[1 true]", "[\"\": 1]", "[\"\"],", "[,1]", "[1,,2]", "[\"x\",,]", "[\"x\"]]", "[\"\",]", "[\"x\"", "[x",
            "[3[4]]", "[1:2]", "[,]", "[-]", "[   , \"\"]", "[\"a\",\n4\n,1,", "[1,]", "[1,,]", "[\"\u{0B}a\"\u{0C}]",
            "[*]", "[\"\"", "[1,", "[1,\n1\n,1", "[{}", "[\u{0B}]", "[\u{0C}]",
        ])
        rejects([[0x5B, 0x61, 0xE5, 0x5D], [0x5B, 0xFF, 0x5D]]) // invalid UTF-8 in an array
    }

    func testRejectsIncompleteAndMiscapitalizedLiterals() {
        rejects(["[fals]", "[nul]", "[tru]", "[True]", "[FALSE]", "[Null]", "nulll", "truefalse"])
    }

    func testRejectsNumbersOutsideTheGrammar() {
        rejects([
            "[++1234]", "[+1]", "[+Inf]", "[-01]", "[-1.0.]", "[-2.]", "[-NaN]", "[.-1]", "[.2e-3]", "[0.1.2]",
            "[0.3e+]", "[0.3e]", "[0.e1]", "[0E+]", "[0E]", "[0e+]", "[0e]", "[1.0e+]", "[1.0e-]", "[1.0e]",
            "[1 000.0]", "[1eE2]", "[2.e+3]", "[2.e-3]", "[2.e3]", "[9.e+]", "[Inf]", "[NaN]", "[\u{FF11}]", "[1+2]",
            "[0x1]", "[0x42]", "[Infinity]", "[0e+-1]", "[-123.123foo]", "[-Infinity]", "[-foo]", "[- 1]", "[-012]",
            "[-.123]", "[-1x]", "[1ea]", "[1.]", "[.123]", "[1.2a-3]", "[1.8011670033376514H-308]", "[012]",
            "-00.0", "-00e0", "00.0", "00e0", "[1e1e1]",
        ])
        rejects([
            [0x31, 0x32, 0x33, 0x00], // a number followed by a NUL byte
            [0x5B, 0x31, 0x32, 0x33, 0xE5, 0x5D], [0x5B, 0x31, 0x65, 0x31, 0xE5, 0x5D], [0x5B, 0x30, 0xE5, 0x5D],
            [0x5B, 0x31, 0x65, 0xE5, 0x5D], [0x5B, 0x31, 0x2E, 0x31, 0x65, 0xE5, 0x5D], // invalid UTF-8 in a number
        ])
    }

    func testRejectsMalformedObjects() {
        rejects([
            #"{"x", null}"#, #"{[: "x"}"#, #"{"x"::"b"}"#, "{🇨🇭}", #"{"a":"a" 123}"#, "{key: 'value'}", #"{"a" b}"#,
            #"{:"b"}"#, #"{"a" "b"}"#, #"{"a":"#, #"{"a""#, "{1:1}", "{9999E9999:1}", "{null:null,null:null}",
            #"{"id":0,,,,,}"#, "{'a':0}", #"{"id":0,}"#, #"{"a":"b"}/**/"#, #"{"a":"b"}/**//"#, #"{"a":"b"}//"#,
            #"{"a":"b"}/"#, #"{"a":"b",,"c":"d"}"#, #"{a: "b"}"#, #"{"a":"a"#, #"{ "foo" : "bar", "a" }"#,
            #"{"a":"b"}#"#, #"{"a":/*comment*/"b"}"#, "{\"a\"\u{0C}:1}",
        ])
        rejects([[0x7B, 0x22, 0xB9, 0x22, 0x3A, 0x22, 0x30, 0x22, 0x2C, 0x7D]]) // lone continuation byte in a key
    }

    func testRejectsMalformedStrings() {
        rejects([
            #"["\uD800\"]"#, #"["\uD800\u"]"#, #"["\uD800\u1"]"#, #"["\uD800\u1x"]"#, "[é]", #"["\x00"]"#,
            #"["\\\"]"#, "[\"\\\t\"]", "[\"\\🌀\"]", #"["\"]"#, #"["\u00A"]"#, #"["\uD834\uDd"]"#,
            #"["\uD800\uD800\x"]"#, #"["\a"]"#, #"["\uqqqq"]"#, "[\\u0020\"asd\"]", "[\\n]", "\"", "['single quote']",
            "abc", "[\"\\", "[\"a\u{0}a\"]", "[\"new\nline\"]", "[\"\t\"]", #""\UA66D""#, "\"\"x", #"["\u{41}"]"#,
            "[\"a\u{1F}\"]", "\"\\u12\"",
        ])
        rejects([
            [0x5B, 0x22, 0x5C, 0x00, 0x22, 0x5D], // backslash then NUL
            [0x5B, 0x22, 0x5C, 0x75, 0xE5, 0x22, 0x5D], // \u then invalid UTF-8
            [0x5B, 0x22, 0x5C, 0xE5, 0x22, 0x5D], // backslash then invalid UTF-8
        ])
    }

    func testRejectsBrokenDocumentStructure() {
        rejects([
            "", " ", "\u{2060}", "<.>", "[<null>]", "[1]x", "[1]]", "[\"asd]", "aå", "]", "{\"x\": true,", "[][]",
            "[", "2@", "{}}", "{\"\":", "{\"a\": true} \"x\"", "['", "[,", "[{", "[\"a", "[\"a\"", "{", "{]", "{,",
            "{[", "{\"a", "{'a'", "[\"\\{[\"\\{[\"\\{[\"\\{", "é", "*", "{\"a\":\"b\"}#{}", "[\\u000A\"\"]", "[1",
            "[ false, nul", "[ true, fals", "[ false, tru", "{\"asd\":\"asd\"", "å", "[\u{2060}]", "[\u{0C}]",
            "\u{0C}[]", "[]\u{0}", "[1]\u{A0}",
        ])
        rejects([
            [0xEF, 0xBB, 0xBF], // a byte order mark and nothing else
            [0xEF, 0xBB, 0x7B, 0x7D], // part of a byte order mark
            [0xE5], // a lone invalid UTF-8 byte
            [0x00], // NUL outside a string
            Array(repeating: 0x5B, count: 100_000), // 100,000 open arrays: refused at the depth limit, no recursion
        ])
    }

    // MARK: - Either way, never a crash (i_)

    /// Inputs the RFC leaves to the implementation. Each must either be rejected or be read into a value that reads
    /// back the same after writing it.
    func testImplementationDefinedInputsAreAcceptedConsistentlyOrRejected() throws {
        let texts = [
            "[123.456e-789]", "[-1e+9999]", "[1.5e+9999]", "[-123123e100000]", "[123123e100000]", "[123e-10000000]",
            "[-123123123123123123123123123123]", "[100000000000000000000]",
            "[-237462374673276894279832749832423479823246327846]",
            "[0.4e" + String(repeating: "9", count: 300) + "]",
            #"{"\uDFAA":0}"#, #"["\uDADA"]"#, #"["\uD888\u1234"]"#, #"["\uD800\n"]"#, #"["\uDAAA"]"#,
            #"["\uD800\uD800\n"]"#, #"["\ud800"]"#, #"["\ud800abc"]"#, #"["\uDd1e\uD834"]"#, #"["\uDFAA"]"#,
            String(repeating: "[", count: 500) + String(repeating: "]", count: 500),
        ]
        var inputs = texts.map(bytes)
        inputs += [
            [0xFF, 0xFE, 0x5B, 0x00, 0x22, 0x00, 0xE9, 0x00, 0x22, 0x00, 0x5D, 0x00], // UTF-16LE with a BOM
            [0x00, 0x5B, 0x00, 0x22, 0x00, 0xE9, 0x00, 0x22, 0x00, 0x5D], // UTF-16BE without a BOM
            [0x5B, 0x00, 0x22, 0x00, 0xE9, 0x00, 0x22, 0x00, 0x5D, 0x00], // UTF-16LE without a BOM
            [0x5B, 0x22, 0xE6, 0x97, 0xA5, 0xD1, 0x88, 0xFA, 0x22, 0x5D], // invalid UTF-8 sequence
            [0x5B, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x5D], // UTF-8 of the surrogate U+D800
            [0x5B, 0x22, 0xFF, 0x22, 0x5D], [0x5B, 0x22, 0xE9, 0x22, 0x5D], // invalid UTF-8, ISO Latin-1
            [0x5B, 0x22, 0x81, 0x22, 0x5D], // a lone continuation byte
            [0x5B, 0x22, 0xF4, 0xBF, 0xBF, 0xBF, 0x22, 0x5D], // above U+10FFFF
            [0x5B, 0x22, 0xC0, 0xAF, 0x22, 0x5D], // overlong two-byte form
            [0x5B, 0x22, 0xFC, 0x83, 0xBF, 0xBF, 0xBF, 0xBF, 0x22, 0x5D], // six-byte form
            [0x5B, 0x22, 0xFC, 0x80, 0x80, 0x80, 0x80, 0x80, 0x22, 0x5D], // six-byte form of NUL
            [0x5B, 0x22, 0xE0, 0xFF, 0x22, 0x5D], // truncated sequence
            [0xEF, 0xBB, 0xBF, 0x7B, 0x7D], // a byte order mark before {}
        ]
        for input in inputs {
            if let value = try? JSONValue(parsing: input) {
                XCTAssertEqual(try JSONValue(parsing: value.jsonBytes), value, "\(input)")
            }
        }
        // What this parser decides: no value it cannot hold (out-of-range doubles, lone surrogates, invalid UTF-8)
        // and no nesting beyond its limit.
        for text in ["[-1e+9999]", "[1.5e+9999]", "[123123e100000]", #"["\uDADA"]"#, #"["\uDd1e\uD834"]"#] {
            XCTAssertThrowsError(try JSONValue(parsing: text), text)
        }
        XCTAssertThrowsError(try JSONValue(parsing: [0x5B, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x5D]))
        XCTAssertThrowsError(
            try JSONValue(parsing: String(repeating: "[", count: 500) + String(repeating: "]", count: 500)))
        XCTAssertEqual(try JSONValue(parsing: "[123e-10000000]"), [0]) // underflow reads as zero
        XCTAssertEqual(try JSONValue(parsing: "[100000000000000000000]"), [1e20]) // big integers read as doubles
    }
}
