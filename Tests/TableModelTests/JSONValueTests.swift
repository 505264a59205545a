import TableModel
import XCTest

final class JSONValueTests: XCTestCase {
    func testLiteralsBuildTheMatchingCases() {
        let value: JSONValue = ["name": "Arizona", "rank": 48, "tags": [true, nil, 1.5]]
        XCTAssertEqual(
            value,
            .object([
                "name": .string("Arizona"), "rank": .number(48),
                "tags": .array([.bool(true), .null, .number(1.5)]),
            ]))
    }

    func testDuplicateDictionaryLiteralKeysKeepTheLastValue() {
        let value: JSONValue = ["a": 1, "a": 2]
        XCTAssertEqual(value, .object(["a": .number(2)]))
    }
}
