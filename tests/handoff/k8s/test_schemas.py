"""Every generated object validates against the pinned Network Operator CRDs and the core/v1 schema; wrong values
do not."""

from __future__ import annotations

import copy

import yaml

from tests.handoff.k8s.conftest import schema_errors
from wizard.export.k8s_checks import check
from wizard.export.k8s_inputs import gather
from wizard.export.k8s_objects import nic_configuration_templates, pfc_vector
from wizard.export.k8s_write import build


def _objects(answers, facts, **kw):  # type: ignore[no-untyped-def]
    return [o for m in build(gather(answers, facts), **kw) for o in m.objects]


def test_every_generated_object_passes_its_schema(answers, facts):
    objects = _objects(answers, facts)
    kinds = sorted({o["kind"] for o in objects})
    assert kinds == [
        "ConfigMap",
        "IPPool",
        "MacvlanNetwork",
        "NicClusterPolicy",
        "NicConfigurationTemplate",
        "Pod",
        "Service",
    ]
    for obj in objects:
        assert schema_errors(obj) == [], (obj["kind"], obj["metadata"]["name"])


def test_written_files_parse_back_to_the_same_objects(answers, facts, tmp_path):
    from wizard.export.k8s_write import write

    inputs = gather(answers, facts)
    manifests = build(inputs)
    write(tmp_path, inputs, check(inputs), manifests)
    for manifest in manifests:
        docs = [d for d in yaml.safe_load_all((tmp_path / manifest.name).read_text()) if d]
        assert docs == manifest.objects


def test_pfc_priority_9_is_rejected_by_the_nic_configuration_schema(answers, facts):
    template = nic_configuration_templates(gather(answers, facts))[0]
    assert template["spec"]["template"]["roceOptimized"]["qos"]["pfc"] == "0,0,0,1,0,0,0,0"
    bad = copy.deepcopy(template)
    bad["spec"]["template"]["roceOptimized"]["qos"]["pfc"] = pfc_vector(9)
    errors = schema_errors(bad)
    assert any("does not match" in e and "pfc" in e for e in errors), errors


def test_wrong_values_fail_the_crd_schemas(answers, facts):
    objects = {o["kind"]: o for o in _objects(answers, facts)}
    macvlan = copy.deepcopy(objects["MacvlanNetwork"])
    macvlan["spec"]["mode"] = "l2"
    assert any("'l2' is not one of" in e for e in schema_errors(macvlan))
    pool = copy.deepcopy(objects["IPPool"])
    del pool["spec"]["perNodeBlockSize"]
    assert any("'perNodeBlockSize' is a required property" in e for e in schema_errors(pool))
    policy = copy.deepcopy(objects["NicClusterPolicy"])
    del policy["spec"]["rdmaSharedDevicePlugin"]["version"]
    assert any("'version' is a required property" in e for e in schema_errors(policy))


def test_wrong_values_fail_the_core_schema(answers, facts):
    pod = copy.deepcopy(next(o for o in _objects(answers, facts) if o["kind"] == "Pod"))
    pod["spec"]["restartPolicy"] = "Sometimes"
    pod["spec"]["containers"][0]["resources"]["limits"]["rdma/rdma_rail0"] = "one"
    pod["spec"]["containers"][0]["securityContext"]["capabilties"] = {}
    errors = schema_errors(pod)
    assert len(errors) == 3, errors
