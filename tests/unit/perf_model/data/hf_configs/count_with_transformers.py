"""Count each fixture's parameters with Hugging Face transformers: the independent count the tests compare with.

Run it where ``transformers`` and ``torch`` are installed (they are not csconform dependencies):

    python tests/unit/perf_model/data/hf_configs/count_with_transformers.py

Each config is instantiated on the ``meta`` device (shapes only, no memory) with the model class its
``architectures`` names, plus the other heads the tests ask about (BERT and RoBERTa with and without
their pre-training heads); the counts, with the transformers version, go to ``transformers_counts.json``.
The small configs of ``variants.json`` (each family's optional fields set away from their defaults, or
left out) are counted the same way, under ``variants``.
Mixtral's active parameters per token are the total less the experts a token is not routed to,
counted from the same instantiated modules.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
import transformers

HERE = Path(__file__).parent
EXTRA_CLASSES = {
    "bert-base-uncased": ["BertForPreTraining", "BertModel"],
    "roberta-base": ["RobertaModel"],
}
# a variant without architectures is counted as the class csconform reads it as
READ_AS = {
    "falcon": "FalconForCausalLM",
    "mpt": "MptForCausalLM",
    "gemma2": "Gemma2ForCausalLM",
    "bert": "BertForPreTraining",
    "roberta": "RobertaForMaskedLM",
}
RENAMED = {
    "LLaMAForCausalLM": "LlamaForCausalLM",
    "MPTForCausalLM": "MptForCausalLM",  # MosaicML's remote-code class name; transformers' in-library class
    "T5WithLMHeadModel": "T5ForConditionalGeneration",
}


def count(config: transformers.PretrainedConfig, class_name: str) -> dict[str, int]:
    model_class = getattr(transformers, RENAMED.get(class_name, class_name))
    with torch.device("meta"):
        model = model_class(config)
    total = sum(p.numel() for p in model.parameters())
    result = {"params": total}
    experts = getattr(config, "num_local_experts", None)
    if experts:
        per_token = config.num_experts_per_tok
        expert_params = sum(p.numel() for n, p in model.named_parameters() if ".experts." in n)
        result["active_params"] = total - expert_params * (experts - per_token) // experts
    return result


def main() -> None:
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for path in sorted(HERE.glob("*.json")):
        if path.name in ("transformers_counts.json", "published.json", "variants.json"):
            continue
        data = json.loads(path.read_text())
        config = transformers.AutoConfig.for_model(**data)
        classes = data.get("architectures", [])[:1] + EXTRA_CLASSES.get(path.stem, [])
        counts[path.stem] = {name: count(config, name) for name in classes}
        print(path.stem, counts[path.stem])
    variants: dict[str, dict[str, int]] = {}
    for name, data in json.loads((HERE / "variants.json").read_text()).items():
        class_name = data["architectures"][0] if "architectures" in data else READ_AS[data["model_type"]]
        variants[name] = count(transformers.AutoConfig.for_model(**data), class_name)
        print(name, variants[name])
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "counts": counts,
        "variants": variants,
    }
    (HERE / "transformers_counts.json").write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
