"""DVC stage ``tokenizer``: the language-model ladder's byte-level BPE tokenizer (lm studies)."""

from negotiation.pipeline import parser, run_tokenizer, stage_main


def main() -> None:
    p = parser(__doc__, "out")
    stage_main(p, lambda a: run_tokenizer(a.study, a.out))


if __name__ == "__main__":
    main()
