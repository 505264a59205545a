import TableModel
import TablecastTesting
import XCTest

/// `JSONObjectReader(parsing:)` keeps a message's members in a list; it must accept, refuse and read exactly what
/// `JSONValue(parsing:)` does, with the same errors.
final class JSONObjectReaderTests: XCTestCase {
    private static let corpus = [
        #"{"type":"edit","table":"groceries","base":41,"ref":"w3.17","at":[0,5],"row":"r42","value":{"item":"milk","qty":2}}"#,
        #" { "a" : [1, -2.5, 3e2, true, false, null], "b": {"c": "d"}, "é": "\u00e9\ud83d\ude00 ünï\n" } "#,
        #"{"n":[-0,0.1,1E-2,9007199254740993,123456789012345,-1.5e+300],"s":"q\"b\\s\/\b\f\r\t"}"#,
        #"{"a":1,"b":2,"a":3}"#, #"{"e\u0301":1,"é":2}"#, #"[1,{"a":2}]"#, #""text""#, "42", "null", "{}",
    ]

    private enum Outcome: Equatable {
        case refused(JSONParseError)
        case notAnObject
        case object([String: JSONValue])
    }

    /// What each parser makes of `bytes`: the list reader's, then the tree parser's.
    private func outcomes(_ bytes: [UInt8], maxDepth: Int = JSONValue.defaultMaxDepth) -> (Outcome, Outcome) {
        let list: Outcome
        do {
            list = try JSONObjectReader(parsing: bytes, maxDepth: maxDepth).map { .object($0.members) } ?? .notAnObject
        } catch { list = .refused(error) }
        let tree: Outcome
        do {
            let value = try JSONValue(parsing: bytes, maxDepth: maxDepth)
            if case .object(let members) = value { tree = .object(members) } else { tree = .notAnObject }
        } catch { tree = .refused(error) }
        return (list, tree)
    }

    func testAgreesWithTheTreeParserOnTheCorpusEveryPrefixAndMutations() throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        var g = SeededGenerator(seed: seed)
        let alphabet = Array(#"{}[]":,\ 0123456789-+.eEtrufalsn"#.utf8) + [0x09, 0x0A, 0x01, 0xC3, 0xA9, 0xFF]
        for text in Self.corpus {
            let bytes = Array(text.utf8)
            for length in 0...bytes.count {
                let (list, tree) = outcomes(Array(bytes[..<length]))
                XCTAssertEqual(list, tree, "\(text.prefix(length))")
            }
            for _ in 0..<2_000 {
                var mutated = bytes
                mutated.mutateRandomly(edits: 1...3, alphabet: alphabet, using: &g)
                let (list, tree) = outcomes(mutated)
                XCTAssertEqual(list, tree, "seed \(seed): \(String(decoding: mutated, as: UTF8.self))")
            }
        }
    }

    func testFindsTheFirstDuplicateKeyAmongFewAndManyMembers() {
        for count in [2, 16, 17, 40] {
            let members = (0..<count).map { #""k\#($0)":\#($0)"# } + [#""k1":0"#, #""k0":0"#]
            let bytes = Array("{\(members.joined(separator: ","))}".utf8)
            let (list, tree) = outcomes(bytes)
            XCTAssertEqual(list, tree)
            XCTAssertEqual(
                list, .refused(JSONParseError(message: #"duplicate object key "k1""#, offset: bytes.count - 14)))
        }
    }

    func testNestingAtAndBeyondTheLimit() {
        for depth in [3, 4, 128, 129] {
            let bytes = Array(
                ("{\"a\":" + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}")
                    .utf8)
            let (list, tree) = outcomes(bytes, maxDepth: depth == 3 || depth == 4 ? 3 : 128)
            XCTAssertEqual(list, tree)
            if case .refused(let error) = list {
                XCTAssertTrue(depth == 4 || depth == 129, "\(error)")
                XCTAssertTrue(error.message.hasPrefix("nesting deeper"), error.message)
            } else {
                XCTAssertTrue(depth == 3 || depth == 128)
            }
        }
    }

    func testReadsMembersAndRefusesTheFirstUnknownInSortedOrder() throws {
        let reader = try XCTUnwrap(try JSONObjectReader(parsing: Array(#"{"z":1,"b":"x","y":true,"a":null}"#.utf8)))
        XCTAssertEqual(reader["b"], "x")
        XCTAssertEqual(reader["a"], .null)
        XCTAssertNil(reader["c"])
        XCTAssertTrue(reader.contains("z"))
        XCTAssertEqual(try reader.reading(at: "m", allowing: ["a", "b", "y", "z"]).path, "m")
        XCTAssertThrowsError(try reader.reading(at: "m", allowing: ["a", "b"])) { error in
            XCTAssertEqual(error as? JSONDecodingError, JSONDecodingError(path: "m.y", message: "unknown field"))
        }
        let tree = try JSONValue(parsing: #"{"z":1,"b":"x","y":true,"a":null}"#)
        XCTAssertThrowsError(try JSONObjectReader(tree, path: "m", allowing: ["a", "b"])) { error in
            XCTAssertEqual(error as? JSONDecodingError, JSONDecodingError(path: "m.y", message: "unknown field"))
        }
    }
}
