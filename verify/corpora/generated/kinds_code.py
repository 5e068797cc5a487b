"""Code-like content kinds of the generated corpus: source code from templates, and JSON."""

from __future__ import annotations

import json
import re
import textwrap

from verify.corpora.generated.kinds_text import _emoji
from verify.corpora.generated.scripts import SCRIPT_BY_NAME, Gen


CODE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "python": (
        '''
        def {{id_fn}}({{id_a}}, {{id_b}}={{int_1}}):
            """{{text_doc}}"""
            if {{id_a}} > {{id_b}}:
                return [{{id_a}} * k for k in range({{int_2}})]
            {{id_c}} = {"{{id_k1}}": {{id_a}}, "{{id_k2}}": '{{str_1}}'}
            # {{text_comment}}
            return {{id_c}}
        ''',
        '''
        class {{T_cls}}({{T_base}}):
            {{id_attr}}: int = {{int_1}}

            def __init__(self, {{id_a}}: str = "{{str_1}}") -> None:
                super().__init__()
                self.{{id_a}} = {{id_a}}

            def {{id_m}}(self, *args, **kwargs):
                for i, x in enumerate(args):
                    if i % {{int_2}} == 0:
                        yield f"{x!r}: {self.{{id_a}}}"
                raise {{T_cls}}Error("{{str_2}}")
        ''',
        '''
        import {{id_mod}}
        from {{id_pkg}}.{{id_mod2}} import {{T_a}}, {{id_f}}

        {{SC_const}} = {{float_1}}

        async def {{id_fn}}(session, url="https://{{id_host}}.example/{{id_path}}"):
            async with session.get(url, timeout={{int_1}}) as resp:
                data = await resp.json()
            return {k: v for k, v in data.items() if k.startswith("{{id_p}}")}
        ''',
    ),
    "javascript": (
        '''
        export function {{cc_fn}}({{cc_a}}, {{cc_b}} = {{int_1}}) {
            // {{text_comment}}
            const {{cc_c}} = {{cc_a}}.map((x) => x * {{cc_b}}).filter(Boolean);
            if ({{cc_c}}.length === 0) {
                throw new Error(`{{str_1}}: ${{{cc_a}}}`);
            }
            return { {{cc_k}}: {{cc_c}}, total: {{cc_c}}.reduce((s, v) => s + v, 0) };
        }
        ''',
        '''
        class {{T_cls}} extends {{T_base}} {
            #{{cc_priv}} = {{int_1}};
            constructor({{cc_a}}) {
                super();
                this.{{cc_a}} = {{cc_a}} ?? "{{str_1}}";
            }
            async {{cc_m}}() {
                const res = await fetch("/api/{{id_path}}?id=" + encodeURIComponent(this.{{cc_a}}));
                return res.ok ? res.json() : null;
            }
        }
        module.exports = { {{T_cls}} };
        ''',
    ),
    "rust": (
        '''
        use std::collections::HashMap;

        /// {{text_doc}}
        pub fn {{id_fn}}<'a>({{id_a}}: &'a str, {{id_b}}: usize) -> Result<Vec<&'a str>, String> {
            let mut {{id_m}}: HashMap<&str, u32> = HashMap::new();
            for word in {{id_a}}.split_whitespace().take({{id_b}}) {
                *{{id_m}}.entry(word).or_insert(0) += {{int_1}};
            }
            if {{id_m}}.is_empty() {
                return Err(format!("{{str_1}} {}", {{id_b}}));
            }
            Ok({{id_m}}.into_keys().collect())
        }
        ''',
        '''
        #[derive(Debug, Clone, PartialEq)]
        pub struct {{T_s}} {
            pub {{id_x}}: f64,
            {{id_y}}: Option<Box<{{T_s}}>>,
        }

        impl {{T_s}} {
            pub const {{SC_c}}: u64 = 0x{{hex_1}};

            pub fn new({{id_x}}: f64) -> Self {
                Self { {{id_x}}, {{id_y}}: None }
            }
        }
        ''',
    ),
    "c": (
        '''
        #include <stdio.h>
        #include <stdlib.h>

        #define {{SC_max}} {{int_1}}

        /* {{text_comment}} */
        static int {{id_fn}}(const char *{{id_s}}, size_t {{id_n}}) {
            int {{id_acc}} = 0;
            for (size_t i = 0; i < {{id_n}} && {{id_s}}[i] != '\\0'; ++i) {
                {{id_acc}} = ({{id_acc}} * 31 + {{id_s}}[i]) % {{SC_max}};
            }
            printf("%s: %d\\n", "{{str_1}}", {{id_acc}});
            return {{id_acc}};
        }
        ''',
        '''
        typedef struct {{id_node}} {
            struct {{id_node}} *next;
            unsigned long {{id_key}};
            char {{id_name}}[{{int_1}}];
        } {{id_node}}_t;

        int main(int argc, char **argv) {
            {{id_node}}_t *head = NULL;
            if (argc < 2) {
                fprintf(stderr, "usage: %s <{{id_arg}}>\\n", argv[0]);
                return EXIT_FAILURE;
            }
            return head ? 0 : {{int_2}};
        }
        ''',
    ),
    "shell": (
        '''
        #!/usr/bin/env bash
        set -euo pipefail
        {{SC_dir}}="${HOME}/{{id_path}}"
        for f in "${{{SC_dir}}}"/*.{{id_ext}}; do
            grep -c '{{str_1}}' "$f" || echo "no match in $f" >&2
        done | sort -n | tail -n {{int_1}}
        ''',
    ),
    "html": (
        '''
        <!DOCTYPE html>
        <html lang="en">
        <head><meta charset="utf-8"><title>{{text_title}}</title></head>
        <body>
            <div class="{{id_cls}}" data-{{id_k}}="{{int_1}}">
                <p>{{text_p}}</p>
                <a href="https://{{id_host}}.example/{{id_path}}?q={{int_2}}&amp;x=1">{{str_1}}</a>
            </div>
        </body>
        </html>
        ''',
        '''
        # {{text_title}}

        - **{{id_a}}**: `{{id_b}}()` returns {{int_1}}
        - [{{str_1}}](https://{{id_host}}.example/{{id_path}})

        | {{id_c}} | {{id_d}} |
        |---|---:|
        | {{str_2}} | {{float_1}} |
        ''',
    ),
}

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_LEADING_INDENT = re.compile(r"(?m)^((?:    )+)")


def _fill_template(g: Gen, template: str) -> str:
    """Fill ``{{prefix_name}}`` placeholders; the same name gets the same value within a snippet."""
    rng = g.rng
    values: dict[str, str] = {}

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            prefix = key.split("_", 1)[0]
            if prefix == "id":
                values[key] = g.ident("snake")
            elif prefix == "cc":
                values[key] = g.ident("camel")
            elif prefix == "T":
                values[key] = g.ident("pascal")
            elif prefix == "SC":
                values[key] = g.ident("screaming")
            elif prefix == "int":
                values[key] = str(rng.choice((0, 1, 2, 3, 8, 10, 16, 42, 100, 255, 1024, rng.randint(0, 99999))))
            elif prefix == "float":
                values[key] = repr(round(rng.uniform(-1000, 1000), rng.randint(0, 6)))
            elif prefix == "hex":
                values[key] = format(rng.getrandbits(rng.choice((16, 32, 64))), "X")
            elif prefix == "str":  # string literal content: any script, no quotes or backslashes
                values[key] = " ".join(g.words(g.script(), rng.randint(1, 4)))
            else:  # text_*: comments, docstrings, titles
                values[key] = g.sentence(g.script() if rng.random() < 0.3 else SCRIPT_BY_NAME["latin"])
        return values[key]

    return _PLACEHOLDER.sub(value, template)


def _code_snippet(g: Gen, language: str | None = None) -> str:
    rng = g.rng
    language = language or rng.choice(tuple(CODE_TEMPLATES))
    text = _fill_template(g, textwrap.dedent(rng.choice(CODE_TEMPLATES[language])).strip("\n"))
    unit = rng.choice(("    ", "    ", "  ", "\t", "\t", "        "))
    text = _LEADING_INDENT.sub(lambda m: unit * (len(m.group(1)) // 4), text)
    if rng.random() < 0.15:  # mixed tabs and spaces, as in real-world diffs
        text = re.sub(r"(?m)^    ", "\t", text, count=rng.randint(1, 3))
    if rng.random() < 0.15:
        text = re.sub(r"(?m)$", lambda m: " " * rng.choice((0, 0, 1, 2)), text)
    return text + "\n"


def kind_code(g: Gen) -> str:
    language = g.rng.choice(tuple(CODE_TEMPLATES))
    return "\n".join(_code_snippet(g, language) for _ in range(g.rng.randint(1, 3)))


def _json_scalar(g: Gen) -> object:
    rng = g.rng
    roll = rng.random()
    if roll < 0.3:
        return " ".join(g.words(g.script(), rng.randint(1, 5)))
    if roll < 0.4:  # strings json.dumps has to escape
        return rng.choice(('say "hi"', "C:\\path\\to", "line1\nline2\ttab", "\u0007bell", "</script>",
                           "emoji " + _emoji(g), "nul\u0000byte", "\u2028sep\u2029"))
    if roll < 0.6:
        return rng.choice((0, -1, rng.randint(-10**6, 10**6), rng.getrandbits(64), 2**53 + 1))
    if roll < 0.75:
        return rng.choice((rng.uniform(-1e6, 1e6), rng.random(), 1e-9 * rng.random(), 6.02e23, -0.0))
    if roll < 0.85:
        return rng.choice((True, False, None))
    return g.ident()


def _json_value(g: Gen, depth: int) -> object:
    rng = g.rng
    if depth <= 0 or rng.random() < 0.4:
        return _json_scalar(g)
    if rng.random() < 0.35:
        return [_json_value(g, depth - 1) for _ in range(rng.randint(0, 5))]
    obj = {}
    for _ in range(rng.randint(0, 6)):
        key = g.ident() if rng.random() < 0.8 else " ".join(g.words(g.script(), 1))
        obj[key] = _json_value(g, depth - 1)
    return obj


def kind_json(g: Gen) -> str:
    rng = g.rng
    value = {g.ident(): _json_value(g, rng.randint(1, 4)) for _ in range(rng.randint(1, 5))}
    indent = rng.choice((None, None, 0, 1, 2, 2, 4, "\t"))
    separators = (",", ":") if indent is None and rng.random() < 0.4 else None
    return json.dumps(value, indent=indent, ensure_ascii=rng.random() < 0.4, separators=separators,
                      sort_keys=rng.random() < 0.2)

