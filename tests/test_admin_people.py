from memories.models import MemoryItem, Person, PersonEdge, PersonHistory
from tests.conftest import converse


def test_explore(api):
    converse(api, [{"role": "user", "name": "Priya", "content": "I'm Priya. My mum Sheila teaches maths."},
                   {"role": "user", "name": "Priya", "content": "She lives in Leeds."}], session_id="s1")
    converse(api, [{"role": "user", "name": "Priya", "content": "Mum moved from Leeds to York last month."}],
             session_id="s2")
    converse(api, [{"role": "user", "name": "Priya", "content": "My mother has a bad knee."},
                   {"role": "user", "name": "Priya", "content": "Shelly loves gardening."}], session_id="s3")
    for p in Person.objects.all():
        print("P", p.id, p.kind, repr(p.name), p.relation, p.relation_word, p.status, list(p.aliases.values_list("alias", flat=True)))
    for m in MemoryItem.objects.all():
        print("M", m.text, m.subject_entity_id, m.object_entity_id, m.expired_at)
    for e in PersonEdge.objects.all():
        print("E", e)
    for h in PersonHistory.objects.all():
        print("H", h.event, h.person_id, h.new_data)
    assert 0
