import ArgumentParser

/// The table a command acts on: `--table T`, as every command takes it (the README's form), or as the first
/// argument (`watch T`), which the commands that took it that way still accept.
struct TableSelection: ParsableArguments {
    @Option(name: .customLong("table"), help: "The table.")
    var option: String?

    @Argument(help: ArgumentHelp("The table, if not given with --table.", valueName: "table"))
    var argument: String?

    func validate() throws {
        switch (option, argument) {
        case (nil, nil): throw ValidationError("missing --table TABLE")
        case (let option?, let argument?) where option != argument:
            throw ValidationError("two tables named: --table \(option) and \(argument)")
        default: break
        }
    }

    /// The table named (`validate` makes sure there is one).
    var name: String { option ?? argument ?? "" }
}
